//! Display modes: the space a View has, and switching modes (the rate limit, pip windows).

use super::*;

impl Controller {
    /// The space a View has in a display mode, for the current window size.
    pub(super) fn container(&self, mode: DisplayMode) -> ContainerDimensions {
        let (w, h) = self.window;
        match mode {
            DisplayMode::Inline => ContainerDimensions {
                width: Some((w - PICKER_PX - CARD_CHROME_PX).max(0.0).floor()),
                // A host profile's cap, when it is lower.
                max_height: Some(
                    self.options
                        .profile
                        .as_ref()
                        .and_then(|p| p.max_height)
                        .map_or(INLINE_MAX_HEIGHT, |m| m.min(INLINE_MAX_HEIGHT)),
                ),
                ..Default::default()
            },
            DisplayMode::Fullscreen => ContainerDimensions {
                width: Some(w.floor()),
                height: Some((h - HEADER_PX).max(0.0).floor()),
                ..Default::default()
            },
            DisplayMode::Pip => {
                ContainerDimensions { width: Some(PIP_SIZE.0), height: Some(PIP_SIZE.1), ..Default::default() }
            }
        }
    }

    /// The display modes this host offers: picture-in-picture needs a window of the host's own.
    pub(super) fn display_modes(&self) -> Vec<DisplayMode> {
        let mut modes = if self.options.launch.embedded {
            vec![DisplayMode::Inline, DisplayMode::Fullscreen]
        } else {
            vec![DisplayMode::Inline, DisplayMode::Fullscreen, DisplayMode::Pip]
        };
        // A host profile offers what its host does.
        if let Some(profile) = &self.options.profile {
            modes.retain(|m| profile.display_modes.contains(m));
        }
        modes
    }

    /// Puts a View into `mode` (one View at a time may leave inline); returns the mode in effect.
    ///
    /// A View may change its mode without the person's action (the spec leaves it to the host,
    /// and Apps offer their own fullscreen buttons), but after a burst of [`MODE_CHANGE_BURST`]
    /// at most once per [`MODE_CHANGE_INTERVAL`]: a request sooner gets the mode in effect.
    pub(super) fn set_display_mode(&mut self, view: &str, mode: DisplayMode) -> DisplayMode {
        let Some((current, changed, held)) =
            self.views.get(view).filter(|v| v.phase.is_open()).map(|v| (v.mode, v.mode_changed, v.person_chose_inline))
        else {
            return DisplayMode::Inline;
        };
        if current == mode {
            return mode;
        }
        if held {
            tracing::info!(view, "display mode {mode:?} refused: the person took this View back inline");
            return current;
        }
        let tokens = {
            let Some(v) = self.views.get_mut(view) else { return current };
            let refill =
                changed.map_or(MODE_CHANGE_BURST, |t| t.elapsed().as_secs_f64() / MODE_CHANGE_INTERVAL.as_secs_f64());
            v.mode_tokens = (v.mode_tokens + refill).min(MODE_CHANGE_BURST);
            v.mode_changed = Some(Instant::now());
            v.mode_tokens
        };
        if tokens < 1.0 {
            tracing::info!(
                view,
                "display mode {mode:?} refused: the View changes modes faster than once per {} ms",
                MODE_CHANGE_INTERVAL.as_millis()
            );
            return current;
        }
        if let Some(v) = self.views.get_mut(view) {
            v.mode_tokens -= 1.0;
        }
        // Another View holding the screen goes back inline first.
        let others: Vec<ViewId> = self
            .views
            .iter()
            .filter(|(id, v)| id.as_str() != view && v.mode != DisplayMode::Inline && v.phase.is_open())
            .map(|(id, _)| id.clone())
            .collect();
        for other in others {
            self.apply_mode(&other, DisplayMode::Inline, true);
        }
        self.apply_mode(view, mode, false);
        mode
    }

    /// Lays the View out in `mode`; `announce` also tells it `displayMode` (the bridge announces
    /// modes it granted itself).
    pub(super) fn apply_mode(&mut self, view: &str, mode: DisplayMode, announce: bool) {
        let previous = self.views.get(view).map(|v| v.mode).unwrap_or_default();
        match (previous, mode) {
            (_, DisplayMode::Pip) => {
                let _ = self.ui.send_event(UserEvent::Window(WindowOp::Pip));
            }
            (DisplayMode::Pip, _) => {
                let _ = self.ui.send_event(UserEvent::Window(WindowOp::Restore));
            }
            _ => {}
        }
        self.shell(ShellCommand::Display { view: view.to_owned(), mode });
        let container = self.container(mode);
        if let Some(v) = self.views.get_mut(view) {
            v.mode = mode;
            v.handle.update_host_context(HostContext {
                display_mode: announce.then_some(mode),
                container_dimensions: Some(container),
                ..Default::default()
            });
        }
    }
}
