//! The proxy pages the window may load: each mounted View's, on its own sandbox origin, with the
//! CSP it is served with. The app fills it in before it mounts a View; the window's scheme
//! handler and navigation guard read it. It also holds each View's document until the View's
//! frame loads it (`view.html?view=<id>`, served once, with the View's CSP).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

/// What the proxy of one View is served with.
#[derive(Debug, Clone)]
pub struct ProxyPolicy {
    /// The sandbox label the View must be loaded from.
    pub label: String,
    /// The `Content-Security-Policy` header value.
    pub csp: String,
    /// The View declared `clipboardWrite` (`_meta.ui.permissions`): its page may write the
    /// clipboard on the person's gesture; without it, by no route.
    pub clipboard_write: bool,
}

/// View id -> proxy policy, filled in before the shell mounts a View.
#[derive(Debug, Clone, Default)]
pub struct ProxyPages {
    policies: Arc<RwLock<HashMap<String, ProxyPolicy>>>,
    /// View id -> the secret part of its document's URL and its HTML, until its frame loads it.
    documents: Arc<Mutex<HashMap<String, (String, String)>>>,
}

impl ProxyPages {
    /// Registers the policy for a View.
    pub fn insert(&self, view: &str, policy: ProxyPolicy) {
        self.policies.write().unwrap_or_else(|e| e.into_inner()).insert(view.to_owned(), policy);
    }

    /// Forgets a View.
    pub fn remove(&self, view: &str) {
        self.policies.write().unwrap_or_else(|e| e.into_inner()).remove(view);
        self.documents.lock().unwrap_or_else(|e| e.into_inner()).remove(view);
    }

    /// Holds `html` as the View's document, for its frame to load once; returns the token its
    /// URL must carry. View ids are easy to guess: without the token, another page of the same
    /// origin (a View of the same server that may fetch `'self'`) could take the document
    /// before the View's own frame loads it.
    pub fn put_document(&self, view: &str, html: String) -> String {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).expect("the OS random source is available");
        let token: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        self.documents.lock().unwrap_or_else(|e| e.into_inner()).insert(view.to_owned(), (token.clone(), html));
        token
    }

    /// The token of the View's document while it waits for its frame.
    pub fn document_token(&self, view: &str) -> Option<String> {
        self.documents.lock().unwrap_or_else(|e| e.into_inner()).get(view).map(|(t, _)| t.clone())
    }

    /// The View's document for the URL with `token`, handed out once: a second load of the same
    /// URL (the View reloading its frame) finds nothing, and a wrong token takes nothing.
    pub fn take_document(&self, view: &str, token: &str) -> Option<String> {
        let mut documents = self.documents.lock().unwrap_or_else(|e| e.into_inner());
        if documents.get(view).is_none_or(|(t, _)| t != token) {
            return None;
        }
        documents.remove(view).map(|(_, html)| html)
    }

    /// True when `url` is the proxy page of a registered View, on that View's own origin.
    pub fn is_proxy_url(&self, url: &str) -> bool {
        let Ok(u) = url::Url::parse(url) else { return false };
        let view = u.query_pairs().find(|(k, _)| k == "view").map(|(_, v)| v.into_owned());
        u.scheme() == crate::sandbox::SANDBOX_SCHEME
            && u.path() == "/proxy.html"
            && view.and_then(|v| self.policy(&v)).is_some_and(|p| Some(p.label.as_str()) == u.host_str())
    }

    /// The policy of a View.
    pub fn policy(&self, view: &str) -> Option<ProxyPolicy> {
        self.policies.read().unwrap_or_else(|e| e.into_inner()).get(view).cloned()
    }
}
