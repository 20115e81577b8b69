"""Consent: the user's decisions per (server fingerprint, canonical folder), stored durably."""
