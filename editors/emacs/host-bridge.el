;;; host-bridge.el --- MCP Host Bridge in Emacs, through eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, convenience
;; URL: see docs/editors.md in the host_bridge repository

;;; Commentary:

;; Starts the host_bridge sidecar (`host-bridge serve', LSP over stdio) for a folder with eglot and adds:
;;
;;   M-x host-bridge-start            start the sidecar for the current project (or a folder)
;;   M-x host-bridge-status           the MCP servers, their states and the folders shared with each
;;   M-x host-bridge-pick-resource    pick a resource (all servers, or one) and open it read-only
;;   M-x host-bridge-shared-folders   share, stop sharing or forget a folder for one server
;;   M-x host-bridge-stop             shut the sidecar down (it answers at once; its servers stop after)
;;
;; Consent questions arrive as `window/showMessageRequest' and eglot asks them in the minibuffer, with the
;; first action already filled in: host_bridge always puts the action that shares nothing and trusts nothing
;; first ("Not now", "Don't trust"), so RET never shares a folder or trusts a server.  Type or complete another
;; action to share.  The protocol is docs/protocol.md; docs/editors.md has the set-up.
;;
;; Configure (every variable is optional):
;;
;;   (setq host-bridge-command '("host-bridge" "serve")
;;         host-bridge-servers '(:fs (:type "stdio" :command "npx"
;;                                    :args ["-y" "@modelcontextprotocol/server-filesystem"])))

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)

(defgroup host-bridge nil
  "MCP Host Bridge: share the folders you choose with MCP servers."
  :group 'tools
  :prefix "host-bridge-")

(defcustom host-bridge-command '("host-bridge" "serve")
  "How to start the sidecar: a program and its arguments."
  :type '(repeat string))

(defcustom host-bridge-servers nil
  "MCP servers as a plist, in the .vscode/mcp.json \"servers\" format (`:ID (:type \"stdio\" :command ...)')."
  :type 'sexp)

(defcustom host-bridge-read-workspace-config t
  "Also start the servers of the folder's .vscode/mcp.json and .mcp.json (each asks for your trust first)."
  :type 'boolean)

(defcustom host-bridge-storage-dir nil
  "Where consent.json and audit.jsonl live (nil: the default, ~/.local/share/host-bridge)."
  :type '(choice (const nil) directory))

(defcustom host-bridge-start-timeout 30
  "Seconds `host-bridge-start' waits for the sidecar to answer `initialize'."
  :type 'number)

(defcustom host-bridge-request-timeout 30
  "Seconds a request to the sidecar may take (listing a slow server's resources can take a while)."
  :type 'number)

(defvar host-bridge-states (make-hash-table :test #'equal)
  "Server id -> the last status the sidecar sent (a plist).")

(defclass host-bridge-server (eglot-lsp-server) ()
  :documentation "The host_bridge sidecar, as eglot talks to it.")

(define-derived-mode host-bridge--unmanaged-mode fundamental-mode "host-bridge"
  "A mode no buffer uses: the sidecar manages no buffer, eglot needs one to name.")

(define-derived-mode host-bridge-resource-mode special-mode "MCP-Resource"
  "A read-only buffer showing an MCP resource.")

(defun host-bridge--message (format-string &rest args)
  "Say FORMAT-STRING with ARGS, prefixed like every message of this package."
  (message "[host-bridge] %s" (apply #'format format-string args)))

(cl-defmethod eglot-initialization-options ((_server host-bridge-server))
  "The sidecar's initializationOptions, from this package's variables."
  (append (list :servers (or host-bridge-servers eglot--{})
                :readWorkspaceConfig (if host-bridge-read-workspace-config t :json-false))
          (when host-bridge-storage-dir
            (list :storageDir (expand-file-name host-bridge-storage-dir)))))

(cl-defmethod eglot-handle-notification
  ((_server host-bridge-server) (_method (eql hostBridge/serverChanged)) &rest status)
  "Remember a server's STATUS and say when its state changed."
  (let* ((id (plist-get status :id))
         (before (plist-get (gethash id host-bridge-states) :state))
         (state (plist-get status :state)))
    (puthash id status host-bridge-states)
    (unless (equal before state)
      (host-bridge--message "%s: %s%s" id state
                            (if-let ((error (plist-get status :lastError)))
                                (format " (%s)" error)
                              "")))))

(cl-defmethod eglot-handle-notification
  ((_server host-bridge-server) (_method (eql hostBridge/resourcesChanged)) &rest _params)
  "A server's list of resources changed: nothing to do until the next pick.")

(cl-defmethod eglot-handle-notification
  ((_server host-bridge-server) (_method (eql hostBridge/resourceUpdated)) &key server uri)
  "Reload the buffer of resource URI of SERVER, if one is open."
  (when-let ((buffer (get-buffer (host-bridge--buffer-name server uri))))
    (host-bridge-open-resource server uri buffer)))

(defun host-bridge--root (&optional directory)
  "The folder the sidecar is for: DIRECTORY, else the current project's root, else `default-directory'."
  (file-name-as-directory
   (expand-file-name
    (or directory
        (when-let ((project (project-current nil))) (project-root project))
        default-directory))))

(defun host-bridge--servers ()
  "Every running sidecar."
  (cl-loop for servers being the hash-values of eglot--servers-by-project
           append (cl-loop for server in servers
                           when (and (cl-typep server 'host-bridge-server) (jsonrpc-running-p server))
                           collect server)))

(defun host-bridge-server (&optional directory)
  "The running sidecar for DIRECTORY (or the current folder); without DIRECTORY, the only one running will do."
  (let* ((root (host-bridge--root directory))
         (running (host-bridge--servers)))
    (or (host-bridge--server-for root)
        (and (null directory) (= (length running) 1) (car running)))))

(defun host-bridge--server-for (root)
  "The running sidecar whose folder is ROOT."
  (cl-find-if (lambda (server) (string= (host-bridge--root (project-root (eglot--project server))) root))
              (host-bridge--servers)))

;;;###autoload
(defun host-bridge-start (&optional directory)
  "Start the sidecar for DIRECTORY (default: the current project or folder); return it."
  (interactive)
  (or (host-bridge--server-for (host-bridge--root directory))
      (let* ((root (host-bridge--root directory))
             (default-directory root)
             (project (cons 'transient root)))
        (let ((eglot-sync-connect nil))   ; waited for below, with a longer bound than eglot's 3 s
          (eglot '(host-bridge--unmanaged-mode) project 'host-bridge-server
                 host-bridge-command "host-bridge"))
        (let ((deadline (+ (float-time) host-bridge-start-timeout)))
          (while (and (not (host-bridge--server-for root)) (< (float-time) deadline))
            (accept-process-output nil 0.05)))
        (or (host-bridge--server-for root)
            (user-error "[host-bridge] the sidecar did not start; see the *EGLOT events* buffer")))))

(defun host-bridge-stop (&optional directory)
  "Shut the sidecar for DIRECTORY down."
  (interactive)
  (when-let ((server (host-bridge-server directory)))
    (eglot-shutdown server)))

(defun host-bridge-request (method &optional params directory)
  "Send the request METHOD (a keyword such as `:hostBridge/status') with PARAMS; its result."
  (jsonrpc-request (or (host-bridge-server directory) (host-bridge-start directory)) method (or params eglot--{})
                   :timeout host-bridge-request-timeout))

(defun host-bridge--ready-status (&optional directory)
  "hostBridge/status once the sidecar read the workspace (asked again while it answers ready: false)."
  (let ((status (host-bridge-request :hostBridge/status nil directory))
        (tries 0))
    (while (and (eq (plist-get status :ready) :json-false) (< tries 100))
      (sleep-for 0.2)
      (setq tries (1+ tries)
            status (host-bridge-request :hostBridge/status nil directory)))
    status))

(defun host-bridge--path (uri)
  "The local path of a file URI."
  (eglot--uri-to-path uri))

(defun host-bridge-status-lines (status)
  "Lines describing STATUS (a hostBridge/status result)."
  (let ((lines '()))
    (if (seq-empty-p (plist-get status :servers))
        (push "No MCP servers configured." lines)
      (seq-doseq (s (plist-get status :servers))
        (push (format "%s  %s  (%s, %s)" (plist-get s :id) (plist-get s :state)
                      (plist-get s :transport) (plist-get s :source))
              lines)
        (let ((shared (mapcar (lambda (r) (host-bridge--path (plist-get r :uri)))
                              (plist-get s :sharedRoots))))
          (push (format "  shared: %s" (if shared (string-join shared ", ") "nothing")) lines))
        (when-let ((error (plist-get s :lastError)))
          (push (format "  error: %s" error) lines))))
    (unless (seq-empty-p (plist-get status :candidates))
      (push "Folders that can be shared:" lines)
      (seq-doseq (c (plist-get status :candidates))
        (push (format "  %s  %s" (plist-get c :name) (host-bridge--path (plist-get c :uri))) lines)))
    (nreverse lines)))

;;;###autoload
(defun host-bridge-status (&optional directory)
  "Show the MCP servers, their states and shared folders in *host-bridge status*; return the buffer."
  (interactive)
  (let ((lines (host-bridge-status-lines (host-bridge--ready-status directory))))
    (with-current-buffer (get-buffer-create "*host-bridge status*")
      (let ((inhibit-read-only t))
        (erase-buffer)
        (insert (string-join lines "\n") "\n"))
      (special-mode)
      (when (called-interactively-p 'interactive)
        (display-buffer (current-buffer)))
      (current-buffer))))

(defun host-bridge-list-resources (&optional server directory)
  "Every resource (of SERVER, or of every server), following nextCursor."
  (let ((items '()) (cursor nil) (seen '()) (done nil))
    (while (not done)
      (let* ((params (append (when server (list :server server)) (when cursor (list :cursor cursor))))
             (page (host-bridge-request :hostBridge/listResources (or params eglot--{}) directory)))
        (setq items (append items (append (plist-get page :items) nil)))
        (setq cursor (plist-get page :nextCursor))
        (if (or (null cursor) (member cursor seen))
            (setq done t)
          (push cursor seen))))
    items))

(defun host-bridge--buffer-name (server uri)
  "The name of the buffer showing resource URI of SERVER."
  (format "mcp-resource://%s/%s" server uri))

(defconst host-bridge--modes
  '(("application/json" . js-json-mode) ("text/markdown" . markdown-mode) ("text/html" . html-mode)
    ("text/x-python" . python-mode) ("text/css" . css-mode) ("application/xml" . xml-mode)
    ("text/xml" . xml-mode) ("text/x-sh" . sh-mode) ("application/javascript" . js-mode))
  "MIME type -> major mode for a resource's text (used when that mode exists).")

(defun host-bridge-open-resource (server uri &optional buffer)
  "Read resource URI of SERVER and show it read-only (in BUFFER, or its own buffer); return the buffer."
  (let* ((result (host-bridge-request :hostBridge/readResource (list :server server :uri uri)))
         (buffer (or buffer (get-buffer-create (host-bridge--buffer-name server uri))))
         (mode nil))
    (with-current-buffer buffer
      (let ((inhibit-read-only t)
            (contents (append (plist-get result :contents) nil)))
        (erase-buffer)
        (dolist (content contents)
          (when (> (length contents) 1)
            (insert (format "--- %s\n" (plist-get content :uri))))
          (cond ((stringp (plist-get content :text))
                 (insert (replace-regexp-in-string "\r$" "" (plist-get content :text)))
                 (setq mode (or mode (alist-get (plist-get content :mimeType) host-bridge--modes
                                                nil nil #'equal))))
                ((stringp (plist-get content :blob))
                 (insert (format "<binary %s>" (or (plist-get content :mimeType) "application/octet-stream")))))
          (unless (bolp) (insert "\n")))
        (when (null contents) (insert "<no contents>\n")))
      (if (and mode (fboundp mode)) (funcall mode) (host-bridge-resource-mode))
      (setq buffer-read-only t)
      (set-buffer-modified-p nil)
      (goto-char (point-min)))
    (when (called-interactively-p 'interactive) (pop-to-buffer buffer))
    buffer))

;;;###autoload
(defun host-bridge-pick-resource (&optional server)
  "Pick a resource (of SERVER, or of every server) with completion and open it read-only."
  (interactive)
  (let* ((items (host-bridge-list-resources server))
         (choices (mapcar (lambda (item)
                            (cons (format "%s  %s  %s" (plist-get item :server)
                                          (or (plist-get item :title) (plist-get item :name))
                                          (plist-get item :uri))
                                  item))
                          items)))
    (if (null choices)
        (host-bridge--message "no resources%s" (if server (format " from %s" server) ""))
      (let* ((picked (completing-read "MCP resource: " choices nil t))
             (item (cdr (assoc picked choices))))
        (when item
          (pop-to-buffer (host-bridge-open-resource (plist-get item :server) (plist-get item :uri))))))))

(defconst host-bridge--folder-actions
  '(("Leave it as it is" . nil) ("Stop sharing it (deny)" . "deny") ("Forget my decision" . "forget")
    ("Share it for this session" . "allowSession") ("Share it" . "allow"))
  "What can be done with a folder, least exposure first (RET takes the first).")

;;;###autoload
(defun host-bridge-shared-folders (&optional server folder decision)
  "Share, stop sharing or forget FOLDER (a path) for SERVER: DECISION is allow, allowSession, deny or forget.
Interactively each is asked with completion; the first action offered leaves everything as it is."
  (interactive)
  (let* ((status (host-bridge--ready-status))
         (servers (mapcar (lambda (s) (plist-get s :id)) (plist-get status :servers)))
         (server (or server (completing-read "MCP server: " servers nil t)))
         (entry (seq-find (lambda (s) (equal (plist-get s :id) server)) (plist-get status :servers)))
         (shared (mapcar (lambda (r) (plist-get r :uri)) (plist-get entry :sharedRoots)))
         (folders (mapcar (lambda (c)
                            (let ((uri (plist-get c :uri)))
                              (cons (format "%s %s" (if (member uri shared) "[shared]" "[not shared]")
                                            (host-bridge--path uri))
                                    uri)))
                          (plist-get status :candidates)))
         (uri (if folder
                  (eglot--path-to-uri (expand-file-name folder))
                (cdr (assoc (completing-read (format "Folder for %s: " server) folders nil t) folders))))
         (decision (or decision
                       (cdr (assoc (completing-read "Do: " host-bridge--folder-actions nil t
                                                    (caar host-bridge--folder-actions))
                                   host-bridge--folder-actions)))))
    (when (and uri decision)
      (let ((result (host-bridge-request :hostBridge/setConsent
                                         (list :server server :uri uri :decision decision))))
        (host-bridge--message "%s: %s for %s%s" (host-bridge--path uri) (plist-get result :applied) server
                              (if-let ((note (plist-get result :message))) (format " (%s)" note) ""))
        result))))

(provide 'host-bridge)
;;; host-bridge.el ends here
