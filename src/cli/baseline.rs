//! Screenshot baselines for `check --baseline DIR`: each View's own picture compared with the
//! stored one, with a tolerance for antialiasing, and a diff image where they differ.
//!
//! A pixel differs when a channel moved by more than [`CHANNEL_TOLERANCE`]. A differing pixel
//! whose color lies within the other picture's colors around it (both ways) is taken for an
//! edge that moved or softened by antialiasing, not a change. The pictures differ when more than [`CHANGED_SHARE`] of the
//! pixels (and at least [`MIN_CHANGED`]) changed; the report names the changed area.

use std::path::Path;

/// How far a channel may move (of 255) before a pixel differs.
const CHANNEL_TOLERANCE: i32 = 40;
/// The share of pixels that may change before the pictures differ.
const CHANGED_SHARE: f64 = 0.001;
/// Fewer changed pixels than this never make a difference.
const MIN_CHANGED: usize = 16;

/// A picture: RGBA, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Picture {
    /// Width in px.
    pub width: usize,
    /// Height in px.
    pub height: usize,
    /// `width * height * 4` bytes.
    pub rgba: Vec<u8>,
}

/// How two pictures compare.
#[derive(Debug, Clone, PartialEq)]
pub enum Comparison {
    /// Alike within the tolerance.
    Same,
    /// Of another size.
    Resized {
        /// The stored size.
        was: (usize, usize),
        /// The new size.
        now: (usize, usize),
    },
    /// Changed: how many pixels, and the area they lie in (`x, y, width, height`).
    Changed {
        /// Changed pixels.
        pixels: usize,
        /// Their bounding box.
        area: (usize, usize, usize, usize),
    },
}

impl Picture {
    /// Reads a PNG (any color type, made RGBA).
    pub fn read(path: &Path) -> Result<Self, String> {
        let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut decoder = png::Decoder::new(std::io::BufReader::new(file));
        decoder.set_transformations(png::Transformations::normalize_to_color8() | png::Transformations::ALPHA);
        let mut reader = decoder.read_info().map_err(|e| format!("{}: not a PNG ({e})", path.display()))?;
        let mut buf = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut buf).map_err(|e| format!("{}: {e}", path.display()))?;
        let (width, height) = (info.width as usize, info.height as usize);
        let samples = info.color_type.samples();
        let mut rgba = Vec::with_capacity(width * height * 4);
        for px in buf[..width * height * samples].chunks(samples) {
            match samples {
                4 => rgba.extend_from_slice(px),
                2 => rgba.extend_from_slice(&[px[0], px[0], px[0], px[1]]),
                _ => return Err(format!("{}: unexpected color layout", path.display())),
            }
        }
        Ok(Self { width, height, rgba })
    }

    /// Writes it as an RGBA PNG.
    pub fn write(&self, path: &Path) -> Result<(), String> {
        let file = std::fs::File::create(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), self.width as u32, self.height as u32);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder.write_header().map_err(|e| format!("{}: {e}", path.display()))?;
        writer.write_image_data(&self.rgba).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn at(&self, x: usize, y: usize) -> &[u8] {
        let i = (y * self.width + x) * 4;
        &self.rgba[i..i + 4]
    }
}

fn alike(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).all(|(a, b)| (i32::from(*a) - i32::from(*b)).abs() <= CHANNEL_TOLERANCE)
}

/// Whether `color` lies, channel by channel, within the colors of the 3 x 3 neighbourhood of
/// `(x, y)` in `picture` (give or take the tolerance): what an edge that moved or softened by
/// antialiasing looks like.
fn between_neighbours(picture: &Picture, x: usize, y: usize, color: &[u8]) -> bool {
    let (x0, y0) = (x.saturating_sub(1), y.saturating_sub(1));
    let (x1, y1) = ((x + 1).min(picture.width - 1), (y + 1).min(picture.height - 1));
    (0..4).all(|c| {
        let channel =
            (y0..=y1).flat_map(|ny| (x0..=x1).map(move |nx| (nx, ny))).map(|(nx, ny)| i32::from(picture.at(nx, ny)[c]));
        let (lo, hi) = channel.fold((255, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let v = i32::from(color[c]);
        v >= lo - CHANNEL_TOLERANCE && v <= hi + CHANNEL_TOLERANCE
    })
}

/// Compares `now` with the stored `was`; the changed pixels, marked, for a diff image.
pub fn compare(was: &Picture, now: &Picture) -> (Comparison, Option<Picture>) {
    if (was.width, was.height) != (now.width, now.height) {
        return (Comparison::Resized { was: (was.width, was.height), now: (now.width, now.height) }, None);
    }
    let mut changed = 0;
    let (mut min_x, mut min_y, mut max_x, mut max_y) = (usize::MAX, usize::MAX, 0, 0);
    // The diff image: the new picture faded, the changed pixels red.
    let mut diff = now.clone();
    for px in diff.rgba.chunks_mut(4) {
        for c in &mut px[..3] {
            *c = 255 - (255 - *c) / 4;
        }
    }
    for y in 0..now.height {
        for x in 0..now.width {
            let (a, b) = (was.at(x, y), now.at(x, y));
            if alike(a, b) || (between_neighbours(was, x, y, b) && between_neighbours(now, x, y, a)) {
                continue;
            }
            changed += 1;
            (min_x, min_y, max_x, max_y) = (min_x.min(x), min_y.min(y), max_x.max(x), max_y.max(y));
            let i = (y * now.width + x) * 4;
            diff.rgba[i..i + 4].copy_from_slice(&[255, 0, 0, 255]);
        }
    }
    let allowed = ((now.width * now.height) as f64 * CHANGED_SHARE) as usize;
    if changed < MIN_CHANGED.max(allowed) {
        return (Comparison::Same, None);
    }
    let area = (min_x, min_y, max_x - min_x + 1, max_y - min_y + 1);
    (Comparison::Changed { pixels: changed, area }, Some(diff))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picture(w: usize, h: usize, paint: impl Fn(usize, usize) -> [u8; 4]) -> Picture {
        let mut rgba = Vec::new();
        for y in 0..h {
            for x in 0..w {
                rgba.extend_from_slice(&paint(x, y));
            }
        }
        Picture { width: w, height: h, rgba }
    }

    const WHITE: [u8; 4] = [255, 255, 255, 255];
    const BLACK: [u8; 4] = [0, 0, 0, 255];

    #[test]
    fn antialiasing_noise_is_not_a_change_and_a_new_box_is() {
        let was = picture(100, 100, |x, _| if x < 50 { BLACK } else { WHITE });
        // The edge moved by one pixel and softened: antialiasing, not a change.
        let soft = picture(100, 100, |x, _| match x {
            x if x < 50 => BLACK,
            50 => [128, 128, 128, 255],
            _ => WHITE,
        });
        assert_eq!(compare(&was, &soft).0, Comparison::Same);
        let slight = picture(100, 100, |x, _| if x < 50 { [20, 20, 20, 255] } else { [250, 250, 250, 255] });
        assert_eq!(compare(&was, &slight).0, Comparison::Same, "within the channel tolerance");
        // A red box of 10 x 10 in the white half.
        let boxed = picture(100, 100, |x, y| match (x, y) {
            (70..80, 20..30) => [255, 0, 0, 255],
            (x, _) if x < 50 => BLACK,
            _ => WHITE,
        });
        let (comparison, diff) = compare(&was, &boxed);
        assert_eq!(comparison, Comparison::Changed { pixels: 100, area: (70, 20, 10, 10) });
        assert_eq!(diff.unwrap().at(75, 25), &[255, 0, 0, 255]);
        assert!(matches!(compare(&was, &picture(100, 90, |_, _| WHITE)).0, Comparison::Resized { .. }));
    }

    #[test]
    fn pictures_round_trip_through_png() {
        let dir = tempfile::tempdir().unwrap();
        let p = picture(7, 5, |x, y| [x as u8 * 30, y as u8 * 40, 9, 255]);
        let path = dir.path().join("p.png");
        p.write(&path).unwrap();
        assert_eq!(Picture::read(&path).unwrap(), p);
        std::fs::write(&path, "not a png").unwrap();
        assert!(Picture::read(&path).unwrap_err().contains("not a PNG"));
    }
}
