"""Workspace detection: editor folders, git and project files → candidate roots."""
