//! Engine hardening: WebKit features that open network connections the View's CSP does not
//! govern are switched off on the host's webview, before the shell page loads.
//!
//! A View's Content-Security-Policy header (`connect-src 'none'` unless it declared origins)
//! governs fetches, but WebKit also connects on a page's behalf without asking the CSP:
//! `<link rel=preconnect href="http://127.0.0.1:PORT">` opens a real TCP connection to any
//! host and port (measured: it reaches a loopback listener from a `connect-src 'none'` frame),
//! and `<link rel=dns-prefetch>` sends a DNS query for any name. Either is enough to leak what
//! a View saw (the order of ports, the labels of a name) and to probe the local network.
//!
//! WebKitGTK (2.42+) lists its engine features through `webkit_settings_get_all_features()`;
//! the crate `webkit2gtk` 2.0.2 has no bindings for them, so a small FFI module below calls
//! libwebkit2gtk-4.1 directly. Decisions for the features of WebKitGTK 2.50.6 (465 features
//! listed, every one read once; status and default as that version reports them):
//!
//! | feature | status | default | set | why |
//! |---|---|---|---|---|
//! | `LinkPreconnect` | embedder | on | **off** | TCP (and TLS) connection to any host:port, no CSP check |
//! | `LinkPreconnectEarlyHints` | stable | on | **off** | the same preconnect, from a 103 response's `Link:` header |
//! | `LinkDNSPrefetch` | stable | on | **off** | a DNS query per name a page writes, no CSP check |
//! | `LinkPrefetch` | testable | off | **off** | speculative fetch; pinned so a new default cannot open it |
//! | `WebTransport` | testable | off | **off** | QUIC/UDP sessions; pinned off |
//! | `ServiceWorkers` | stable | on | **off** | runs under its own script's CSP and outlives the View |
//! | `ServiceWorkerNavigationPreload` | stable | on | **off** | requests made by a service worker |
//! | `BackgroundFetchAPI` | testable | off | **off** | downloads that continue without the page; pinned off |
//! | `PushAPI` | embedder | off | **off** | a subscription connects to a push service; pinned off |
//! | `PrivateClickMeasurement` | embedder | on | **off** | attribution reports sent later by the network process, to sites a page names |
//! | `PrivateClickMeasurementFraudPrevention` | stable | off | **off** | token requests of the above; pinned off |
//! | `LinkPreload` | embedder | on | on | a fetch checked against the CSP directive of its `as` type (measured: refused, reported) |
//! | `BeaconAPI` | mature | on | on | `sendBeacon` is checked against `connect-src` (measured: nothing arrives) |
//! | `WebSocket` | embedder | on | on | checked against `connect-src` |
//! | `MediaDevices` | embedder | on | on | local capture only, behind the frame's `allow` (spec permissions `camera`/`microphone`) |
//! | `ICECandidateFiltering`, `EnumeratingVisibleNetworkInterfaces` | internal | on | on | only matter with WebRTC, which is off |
//! | `SafeBrowsing`, `SKAttribution`, `PrivateTokenUsageByThirdParty` | embedder/stable | on | on | Apple platform code paths, no effect on GTK |
//! | `UpgradeKnownHostsToHTTPS`, `UpgradeMixedContent` | internal/stable | on | on | rewrite a URL's scheme, open no connection of their own |
//! | `XSLT` | internal | on | on | `document()` loads are refused unless same-origin (measured: nothing arrives) |
//! | `SiteIsolation` and every other feature | | | default | open no connection of their own |
//!
//! Settings outside the feature list: WebRTC (`enable-webrtc`, off by default here) is set off
//! explicitly: an `RTCPeerConnection` with `stun:`/`turn:` ICE servers sends UDP to any host and
//! port, and WebKit has no CSP directive for it. `enable-media-stream` stays on: it is local
//! capture (no connection) and the MCP Apps permissions `camera` and `microphone` need it.
//! `enable-hyperlink-auditing` and `enable-dns-prefetching` are deprecated no-ops in 2.50 (the
//! first prints a GLib warning when set), so they are not called: `<a ping>` goes through
//! `connect-src` (measured: no ping arrives, even with every default), and DNS prefetching is
//! the `LinkDNSPrefetch` feature above. Speculation rules and `<link rel=prerender>` do not
//! exist in this WebKit (`HTMLScriptElement.supports("speculationrules")` is false).
//!
//! `tests/e2e_hostile.rs` (`a_view_cannot_open_connections_around_the_csp`) and `check --self`
//! aim all of this at loopback listeners; a DNS query cannot be watched there, so
//! `LinkDNSPrefetch` rests on the feature being off (`relList.supports("dns-prefetch")` is then
//! false in a View).
//!
//! The feature API needs WebKitGTK 2.42 or newer at link time (older libraries lack the symbols).
//!
//! `MCP_APPS_HOST_TEST_ALLOW_PRECONNECT` (tests only) leaves every feature and setting at
//! WebKit's defaults, so the tests can prove their canary notices the hole.
//!
//! EXPERIMENT (kept in the code as a switch, not a supported mode):
//! `MCP_APPS_HOST_EXPERIMENT_SITE_ISOLATION=1` switches WebKit's `SiteIsolation` feature on
//! (status unstable, default off in 2.50), `=shared` also `SiteIsolationSharedProcess`, to
//! measure whether cross-origin frames (`mcp-host://app` vs `mcp-sandbox://<label>`) then get
//! web processes of their own, so one View's busy loop cannot freeze the shell or other Views.

/// Test-only: leaves the engine at WebKit's defaults (see the module docs).
pub(crate) const ALLOW_PRECONNECT_ENV: &str = "MCP_APPS_HOST_TEST_ALLOW_PRECONNECT";

/// EXPERIMENT: `1` switches `SiteIsolation` on, `shared` also `SiteIsolationSharedProcess`
/// (see the module docs). Unset, or any other value, leaves both at WebKit's default (off).
pub(crate) const SITE_ISOLATION_ENV: &str = "MCP_APPS_HOST_EXPERIMENT_SITE_ISOLATION";

/// Engine features switched off, by WebKit identifier; each one can make the web or network
/// process connect somewhere the View's CSP does not govern.
pub(crate) const SWITCHED_OFF: &[&str] = &[
    // `<link rel=preconnect>`: a TCP (and TLS) handshake with any host:port, no CSP check.
    "LinkPreconnect",
    // Preconnects from `Link:` headers of 103 Early Hints responses: the same connection.
    "LinkPreconnectEarlyHints",
    // `<link rel=dns-prefetch>`: a DNS query for any name, no CSP check; the name carries data.
    "LinkDNSPrefetch",
    // `<link rel=prefetch>`: off by default here; pinned so a new WebKit default cannot open a
    // speculative fetch path no View needs.
    "LinkPrefetch",
    // QUIC/UDP sessions: off by default here, pinned off.
    "WebTransport",
    // A service worker runs under its own script's CSP, not the View's, and outlives the View.
    "ServiceWorkers",
    // Requests a service worker makes on a navigation: off with service workers.
    "ServiceWorkerNavigationPreload",
    // Downloads that continue after the page is gone: off by default here, pinned off.
    "BackgroundFetchAPI",
    // A push subscription connects to a push service: off by default here, pinned off.
    "PushAPI",
    // Attribution reports the network process sends later, to sites named in a link's
    // attributes: not a request of the page, so no CSP sees it.
    "PrivateClickMeasurement",
    // Token requests of Private Click Measurement: off by default here, pinned off.
    "PrivateClickMeasurementFraudPrevention",
];

/// Switches the engine features of [`SWITCHED_OFF`] and WebRTC off on `webview`. Call it right
/// after building the webview and before it loads anything, so no page ever runs with them on.
#[cfg(target_os = "linux")]
pub(super) fn harden(webview: &wry::WebView) {
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    if std::env::var_os(ALLOW_PRECONNECT_ENV).is_some() {
        // Every webview is hardened (the shell and each View): said once.
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::error!(
                "{ALLOW_PRECONNECT_ENV} is set: engine features stay at WebKit's defaults, Views can open connections around their CSP"
            );
        });
        return;
    }
    let view = webview.webview();
    if let Some(uri) = view.uri().filter(|u| !u.is_empty()) {
        // Preferences reach an existing page too, but a page that loaded first ran without them.
        tracing::warn!("engine hardening after the webview loaded {uri}");
    }
    let Some(settings) = WebViewExt::settings(&view) else {
        tracing::error!("the webview has no settings: engine features cannot be switched off");
        return;
    };
    webkit2gtk::SettingsExt::set_enable_webrtc(&settings, false);
    switch_off(&settings, SWITCHED_OFF);
    let isolation: &[&str] = match std::env::var(SITE_ISOLATION_ENV).as_deref() {
        Ok("1") => &["SiteIsolation"],
        Ok("shared") => &["SiteIsolation", "SiteIsolationSharedProcess"],
        _ => &[],
    };
    if !isolation.is_empty() {
        tracing::warn!("{SITE_ISOLATION_ENV} is set: EXPERIMENT, switching on {}", isolation.join(", "));
        switch_features(&settings, isolation, true);
    }
}

#[cfg(not(target_os = "linux"))]
pub(super) fn harden(_webview: &wry::WebView) {}

/// What a View's page may do with the clipboard, from what its View declared: the Async
/// Clipboard API (`navigator.clipboard`) only with `clipboardWrite` (`write`), and never a read
/// from script (`DOMPasteAccessRequests` off: `readText`, `read` and `execCommand("paste")`
/// are refused; the person's own paste, a key or a menu, is not a request). Called with `false`
/// before the page loads (a page made before its View is known grants nothing) and again when
/// the View is known: a frame gets the API as the setting is when the frame is made, so the
/// View's own frame, made after, has it and the proxy's does not. `execCommand("copy")` is
/// refused in the frames made without the API by the web process extension
/// (`webext/clipboard.c`): WebKit runs it on any user gesture, whatever the settings.
#[cfg(target_os = "linux")]
pub(crate) fn clipboard(webview: &wry::WebView, write: bool) {
    use webkit2gtk::WebViewExt;
    use wry::WebViewExtUnix;
    let Some(settings) = WebViewExt::settings(&webview.webview()) else {
        tracing::error!("a View's webview has no settings: its clipboard access cannot be set");
        return;
    };
    webkit2gtk::SettingsExt::set_javascript_can_access_clipboard(&settings, false);
    switch_features(&settings, &["DOMPasteAccessRequests"], false);
    switch_features(&settings, &["AsyncClipboardAPI"], write);
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn clipboard(_webview: &wry::WebView, _write: bool) {}

/// Switches each feature of `names` off in `settings`; logs what changed and what is missing.
#[cfg(target_os = "linux")]
fn switch_off(settings: &webkit2gtk::Settings, names: &[&str]) {
    switch_features(settings, names, false);
}

/// Sets each feature of `names` to `on` in `settings`; logs what changed and what is missing.
#[cfg(target_os = "linux")]
fn switch_features(settings: &webkit2gtk::Settings, names: &[&str], on: bool) {
    let word = if on { "on" } else { "off" };
    let Some(features) = ffi::FeatureList::all() else {
        tracing::error!("WebKit listed no engine features: {} cannot be switched {word}", names.join(", "));
        return;
    };
    let settings = ffi::SettingsRef::new(settings);
    for name in names {
        let Some(feature) = features.iter().find(|f| f.identifier().as_deref() == Some(*name)) else {
            tracing::warn!("WebKit has no engine feature {name}: cannot switch it {word}");
            continue;
        };
        if settings.enabled(&feature) != on {
            settings.set_enabled(&feature, on);
            tracing::debug!(
                "switched engine feature {name} {word} (WebKit default {}, status {})",
                feature.default_value(),
                feature.status()
            );
        }
        if settings.enabled(&feature) != on {
            tracing::error!("engine feature {name} is not {word} after switching it {word}");
        }
    }
}

/// The few WebKitFeature calls the `webkit2gtk` crate has no bindings for.
///
/// A reviewed exception to the crate's `unsafe_code = "deny"`: plain C calls into the
/// libwebkit2gtk-4.1 that wry already links, wrapped so the rest of the module is safe code.
/// The signatures follow `webkit/WebKitFeature.h` and `webkit/WebKitSettings.h` (2.42+).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
mod ffi {
    use std::ffi::{c_char, c_int, CStr};
    use std::marker::PhantomData;
    use std::ptr::NonNull;

    use webkit2gtk::ffi::WebKitSettings;
    use webkit2gtk::glib::translate::ToGlibPtr;

    #[repr(C)]
    struct WebKitFeature {
        _opaque: [u8; 0],
    }

    #[repr(C)]
    struct WebKitFeatureList {
        _opaque: [u8; 0],
    }

    #[link(name = "webkit2gtk-4.1")]
    extern "C" {
        fn webkit_settings_get_all_features() -> *mut WebKitFeatureList;
        fn webkit_feature_list_get_length(list: *mut WebKitFeatureList) -> usize;
        fn webkit_feature_list_get(list: *mut WebKitFeatureList, index: usize) -> *mut WebKitFeature;
        fn webkit_feature_list_unref(list: *mut WebKitFeatureList);
        fn webkit_feature_get_identifier(feature: *mut WebKitFeature) -> *const c_char;
        fn webkit_feature_get_default_value(feature: *mut WebKitFeature) -> c_int;
        fn webkit_feature_get_status(feature: *mut WebKitFeature) -> c_int;
        fn webkit_settings_get_feature_enabled(settings: *mut WebKitSettings, feature: *mut WebKitFeature) -> c_int;
        fn webkit_settings_set_feature_enabled(
            settings: *mut WebKitSettings,
            feature: *mut WebKitFeature,
            enabled: c_int,
        );
    }

    /// Every engine feature of this WebKit (a reference the list holds; released on drop).
    pub(super) struct FeatureList(NonNull<WebKitFeatureList>);

    impl FeatureList {
        /// The list, or `None` if WebKit returned none.
        pub(super) fn all() -> Option<Self> {
            // SAFETY: no arguments; returns a new reference (transfer full) or NULL.
            NonNull::new(unsafe { webkit_settings_get_all_features() }).map(Self)
        }

        /// The features, in WebKit's order.
        pub(super) fn iter(&self) -> impl Iterator<Item = Feature<'_>> + '_ {
            // SAFETY: `self.0` is a live list (we hold a reference until drop).
            let len = unsafe { webkit_feature_list_get_length(self.0.as_ptr()) };
            (0..len).filter_map(move |i| {
                // SAFETY: live list, `i < len`; the feature is owned by the list (transfer
                // none), which `Feature`'s lifetime keeps alive.
                let ptr = unsafe { webkit_feature_list_get(self.0.as_ptr(), i) };
                NonNull::new(ptr).map(|ptr| Feature { ptr, _list: PhantomData })
            })
        }
    }

    impl Drop for FeatureList {
        fn drop(&mut self) {
            // SAFETY: releases the reference `all` took; `self.0` is not used afterwards.
            unsafe { webkit_feature_list_unref(self.0.as_ptr()) }
        }
    }

    /// One feature, borrowed from its list.
    pub(super) struct Feature<'a> {
        ptr: NonNull<WebKitFeature>,
        _list: PhantomData<&'a FeatureList>,
    }

    impl Feature<'_> {
        /// Its stable identifier, e.g. `LinkPreconnect`.
        pub(super) fn identifier(&self) -> Option<String> {
            // SAFETY: live feature; returns a NUL-terminated string the feature owns (or NULL),
            // copied here before the borrow ends.
            let s = unsafe { webkit_feature_get_identifier(self.ptr.as_ptr()) };
            // SAFETY: `s` is non-NULL and NUL-terminated, valid while the feature lives.
            (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
        }

        /// WebKit's default for it.
        pub(super) fn default_value(&self) -> bool {
            // SAFETY: live feature; returns a gboolean.
            unsafe { webkit_feature_get_default_value(self.ptr.as_ptr()) != 0 }
        }

        /// Its `WebKitFeatureStatus`, as a word.
        pub(super) fn status(&self) -> &'static str {
            // SAFETY: live feature; returns a WebKitFeatureStatus (a C enum, an int).
            let status = unsafe { webkit_feature_get_status(self.ptr.as_ptr()) };
            const NAMES: [&str; 8] =
                ["embedder", "unstable", "internal", "developer", "testable", "preview", "stable", "mature"];
            usize::try_from(status).ok().and_then(|i| NAMES.get(i).copied()).unwrap_or("unknown")
        }
    }

    /// A webview's `WebKitSettings`, borrowed.
    pub(super) struct SettingsRef<'a> {
        ptr: *mut WebKitSettings,
        _settings: PhantomData<&'a webkit2gtk::Settings>,
    }

    impl<'a> SettingsRef<'a> {
        pub(super) fn new(settings: &'a webkit2gtk::Settings) -> Self {
            let ptr: *mut WebKitSettings = settings.to_glib_none().0;
            Self { ptr, _settings: PhantomData }
        }

        /// Whether `feature` is on in these settings.
        pub(super) fn enabled(&self, feature: &Feature<'_>) -> bool {
            // SAFETY: both pointers are live (borrowed settings, borrowed feature); returns a gboolean.
            unsafe { webkit_settings_get_feature_enabled(self.ptr, feature.ptr.as_ptr()) != 0 }
        }

        /// Switches `feature` on or off in these settings.
        pub(super) fn set_enabled(&self, feature: &Feature<'_>, enabled: bool) {
            // SAFETY: both pointers are live; WebKit only reads the feature and updates the
            // settings object, on the UI thread that owns it.
            unsafe { webkit_settings_set_feature_enabled(self.ptr, feature.ptr.as_ptr(), c_int::from(enabled)) }
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A name WebKit does not know is only a warning at run time; here it fails, so a WebKit
    /// that renamed or dropped a feature gets the list reviewed.
    #[test]
    fn every_switched_off_feature_exists_in_this_webkit() {
        let features = ffi::FeatureList::all().expect("WebKit lists its features");
        let known: Vec<String> = features.iter().filter_map(|f| f.identifier()).collect();
        assert!(known.len() > 100, "{} features", known.len());
        for name in SWITCHED_OFF {
            assert!(known.iter().any(|k| k == name), "WebKit has no feature {name}");
        }
    }
}
