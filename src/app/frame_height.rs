//! A View's inline frame height and the guard against a View chasing it.

use super::*;

/// What to do with a View's frame after its size report.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Sizing {
    /// Nothing: an echo of the host's own resize, or a View held at its height.
    Keep,
    /// Resize the frame to this height.
    Resize(f64),
    /// The View chases its frame: the frame stays at this height (no resize).
    Hold(f64),
}

/// A View's inline frame height. The frame follows the View's `size-changed` reports, except:
/// - a report within [`RESIZE_ECHO_PX`] of the frame is an echo of the host's own resize (a
///   View whose content is `100vh` reports its frame's height: it keeps its first height);
/// - a View that asks for the same step more right after each of the host's resizes
///   ([`CHASE_STEPS`] times in a row, each within [`CHASE_WINDOW`]) sizes itself from its frame
///   (`100vh` plus a margin is always taller than its frame): the frame stops there, and the
///   same request again is ignored. Any other report (its content changed) is followed again,
///   so content held by mistake (it grew in even steps, quickly) misses only its last step
///   until its next change.
#[derive(Debug, Clone)]
pub(super) struct FrameHeight {
    height: f64,
    /// When the host last resized the frame.
    resized_at: Option<Instant>,
    /// A growth under way: its step, and how many steps so far.
    chase: Option<(f64, u32)>,
    /// Held: the request that is ignored.
    held: Option<f64>,
}

impl FrameHeight {
    pub(super) fn new(height: f64) -> Self {
        Self { height, resized_at: None, chase: None, held: None }
    }

    /// The frame's height now.
    pub(super) fn height(&self) -> f64 {
        self.height
    }

    /// The View reported `reported` px (clamped) at `now`.
    pub(super) fn report(&mut self, reported: f64, now: Instant) -> Sizing {
        let step = reported - self.height;
        if step.abs() <= RESIZE_ECHO_PX {
            return Sizing::Keep;
        }
        if let Some(ignored) = self.held {
            if (reported - ignored).abs() <= RESIZE_ECHO_PX {
                return Sizing::Keep;
            }
            self.held = None;
            self.chase = None;
            return self.resize(reported, now);
        }
        let soon = self.resized_at.is_some_and(|t| now.saturating_duration_since(t) < CHASE_WINDOW);
        match self.chase {
            Some((last, steps)) if step > 0.0 && soon && (step - last).abs() <= RESIZE_ECHO_PX => {
                if steps + 1 >= CHASE_STEPS {
                    self.chase = None;
                    self.held = Some(reported);
                    return Sizing::Hold(self.height);
                }
                self.chase = Some((last, steps + 1));
            }
            _ if step > 0.0 => self.chase = Some((step, 1)),
            _ => self.chase = None,
        }
        self.resize(reported, now)
    }

    pub(super) fn resize(&mut self, height: f64, now: Instant) -> Sizing {
        self.height = height;
        self.resized_at = Some(now);
        Sizing::Resize(height)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `reports` (each `ms` after the last); returns what the host did with each.
    fn feed(first: f64, reports: &[f64], ms: u64) -> (Vec<Sizing>, FrameHeight) {
        let mut frame = FrameHeight::new(first);
        let mut now = Instant::now();
        let out = reports
            .iter()
            .map(|r| {
                now += Duration::from_millis(ms);
                frame.report(*r, now)
            })
            .collect();
        (out, frame)
    }

    #[test]
    fn a_view_that_fills_its_frame_keeps_the_first_height() {
        // `height: 100vh` reports the frame's own height: an echo.
        let (sizing, frame) = feed(427.0, &[427.0, 428.0, 427.0], 20);
        assert!(sizing.iter().all(|s| *s == Sizing::Keep), "{sizing:?}");
        assert_eq!(frame.height, 427.0);
    }

    #[test]
    fn a_view_that_chases_its_frame_is_held() {
        // `100vh` plus a 16 px margin: every resize makes it ask for 16 px more.
        let mut frame = FrameHeight::new(427.0);
        let mut now = Instant::now();
        let mut resizes = 0;
        let mut held = 0;
        for _ in 0..50 {
            now += Duration::from_millis(300);
            match frame.report(frame.height + 16.0, now) {
                Sizing::Keep => {}
                Sizing::Resize(_) => resizes += 1,
                Sizing::Hold(_) => held += 1,
            }
        }
        assert_eq!(resizes, CHASE_STEPS as usize - 1);
        assert_eq!(held, 1, "held once; the same request again is ignored");
        assert_eq!(frame.height, 427.0 + 16.0 * 3.0);
        // Its content changes: followed again.
        now += Duration::from_millis(30);
        assert_eq!(frame.report(300.0, now), Sizing::Resize(300.0));
    }

    #[test]
    fn content_that_grows_is_followed() {
        // Uneven steps: followed, however fast.
        let (sizing, frame) = feed(240.0, &[300.0, 420.0, 470.0, 600.0, 610.0], 30);
        assert!(sizing.iter().all(|s| matches!(s, Sizing::Resize(_))), "{sizing:?}");
        assert_eq!(frame.height, 610.0);
        // Even steps slower than the chase window: followed.
        let (sizing, frame) = feed(240.0, &[260.0, 280.0, 300.0, 320.0, 340.0, 360.0], 3500);
        assert!(sizing.iter().all(|s| matches!(s, Sizing::Resize(_))), "{sizing:?}");
        assert_eq!(frame.height, 360.0);
        // Even steps, fast: the last is held, the next change is followed.
        let (sizing, frame) = feed(240.0, &[260.0, 280.0, 300.0, 320.0, 400.0], 30);
        assert_eq!(sizing[3], Sizing::Hold(300.0));
        assert_eq!(sizing[4], Sizing::Resize(400.0));
        assert_eq!(frame.height, 400.0);
    }

    #[test]
    fn shrinking_is_always_followed() {
        let (sizing, frame) = feed(427.0, &[150.0], 20);
        assert_eq!(sizing, [Sizing::Resize(150.0)]);
        assert_eq!(frame.height, 150.0);
    }
}
