//! `hostContext.styles`: the standard style variables (and only those: the App SDK rejects any
//! other key) for this host's light and dark themes, and `css.fonts`.

use serde_json::{json, Map, Value};

use super::Theme;

/// The 76 standard variable names (`McpUiStyleVariableKey`).
pub const STYLE_VARIABLE_KEYS: [&str; 76] = [
    "--color-background-primary",
    "--color-background-secondary",
    "--color-background-tertiary",
    "--color-background-inverse",
    "--color-background-ghost",
    "--color-background-info",
    "--color-background-danger",
    "--color-background-success",
    "--color-background-warning",
    "--color-background-disabled",
    "--color-text-primary",
    "--color-text-secondary",
    "--color-text-tertiary",
    "--color-text-inverse",
    "--color-text-ghost",
    "--color-text-info",
    "--color-text-danger",
    "--color-text-success",
    "--color-text-warning",
    "--color-text-disabled",
    "--color-border-primary",
    "--color-border-secondary",
    "--color-border-tertiary",
    "--color-border-inverse",
    "--color-border-ghost",
    "--color-border-info",
    "--color-border-danger",
    "--color-border-success",
    "--color-border-warning",
    "--color-border-disabled",
    "--color-ring-primary",
    "--color-ring-secondary",
    "--color-ring-inverse",
    "--color-ring-info",
    "--color-ring-danger",
    "--color-ring-success",
    "--color-ring-warning",
    "--font-sans",
    "--font-mono",
    "--font-weight-normal",
    "--font-weight-medium",
    "--font-weight-semibold",
    "--font-weight-bold",
    "--font-text-xs-size",
    "--font-text-sm-size",
    "--font-text-md-size",
    "--font-text-lg-size",
    "--font-heading-xs-size",
    "--font-heading-sm-size",
    "--font-heading-md-size",
    "--font-heading-lg-size",
    "--font-heading-xl-size",
    "--font-heading-2xl-size",
    "--font-heading-3xl-size",
    "--font-text-xs-line-height",
    "--font-text-sm-line-height",
    "--font-text-md-line-height",
    "--font-text-lg-line-height",
    "--font-heading-xs-line-height",
    "--font-heading-sm-line-height",
    "--font-heading-md-line-height",
    "--font-heading-lg-line-height",
    "--font-heading-xl-line-height",
    "--font-heading-2xl-line-height",
    "--font-heading-3xl-line-height",
    "--border-radius-xs",
    "--border-radius-sm",
    "--border-radius-md",
    "--border-radius-lg",
    "--border-radius-xl",
    "--border-radius-full",
    "--border-width-regular",
    "--shadow-hairline",
    "--shadow-sm",
    "--shadow-md",
    "--shadow-lg",
];

/// One theme's colours, by family: `[primary, secondary, tertiary, inverse, ghost, info, danger,
/// success, warning, disabled]`.
struct Palette {
    background: [&'static str; 10],
    text: [&'static str; 10],
    border: [&'static str; 10],
    /// `[primary, secondary, inverse, info, danger, success, warning]`.
    ring: [&'static str; 7],
    shadow: &'static str,
}

const LIGHT: Palette = Palette {
    background: [
        "#ffffff",
        "#f6f7f9",
        "#eceef2",
        "#1b1f24",
        "transparent",
        "#e8f0fe",
        "#fdecea",
        "#e6f4ea",
        "#fff4e5",
        "#f1f3f5",
    ],
    text: [
        "#1b1f24", "#4a5260", "#6b7380", "#ffffff", "#8a929e", "#1a56db", "#c62828", "#1e7e34", "#8a5300", "#a0a6b0",
    ],
    border: [
        "#d0d5dd",
        "#dfe3e8",
        "#eceef2",
        "#1b1f24",
        "transparent",
        "#8ab4f8",
        "#f28b82",
        "#81c995",
        "#fdd663",
        "#e3e6ea",
    ],
    ring: ["#2f6feb", "#8a929e", "#ffffff", "#1a56db", "#c62828", "#1e7e34", "#b26a00"],
    shadow: "rgba(16, 24, 40, 0.12)",
};

const DARK: Palette = Palette {
    background: [
        "#1c2026",
        "#14171b",
        "#262b33",
        "#e6e9ee",
        "transparent",
        "#132a4a",
        "#3b1416",
        "#102a1a",
        "#33240a",
        "#23272e",
    ],
    text: [
        "#e6e9ee", "#b4bcc8", "#8b94a3", "#14171b", "#6b7380", "#79a8ff", "#ef6b6b", "#5fcf80", "#f2b84b", "#5c6370",
    ],
    border: [
        "#3a414c",
        "#2d333b",
        "#23272e",
        "#e6e9ee",
        "transparent",
        "#2f5ea8",
        "#8c2f2f",
        "#2f7a48",
        "#8a6414",
        "#2a2f37",
    ],
    ring: ["#58a6ff", "#6b7380", "#14171b", "#79a8ff", "#ef6b6b", "#5fcf80", "#f2b84b"],
    shadow: "rgba(0, 0, 0, 0.45)",
};

/// The `@font-face` rules of `css.fonts`: local fonts only, nothing is fetched.
pub const FONTS_CSS: &str = "@font-face { font-family: \"Host Sans\"; src: local(\"Inter\"), local(\"Cantarell\"), local(\"DejaVu Sans\"), local(\"Segoe UI\"); }\n\
@font-face { font-family: \"Host Mono\"; src: local(\"JetBrains Mono\"), local(\"DejaVu Sans Mono\"), local(\"Consolas\"); }";

/// `hostContext.styles` for a theme: every standard variable, plus `css.fonts`.
pub fn host_styles(theme: Theme) -> Value {
    let p = match theme {
        Theme::Light => &LIGHT,
        Theme::Dark => &DARK,
    };
    let mut vars = Map::new();
    let states =
        ["primary", "secondary", "tertiary", "inverse", "ghost", "info", "danger", "success", "warning", "disabled"];
    for (i, state) in states.iter().enumerate() {
        vars.insert(format!("--color-background-{state}"), json!(p.background[i]));
        vars.insert(format!("--color-text-{state}"), json!(p.text[i]));
        vars.insert(format!("--color-border-{state}"), json!(p.border[i]));
    }
    for (i, state) in ["primary", "secondary", "inverse", "info", "danger", "success", "warning"].iter().enumerate() {
        vars.insert(format!("--color-ring-{state}"), json!(p.ring[i]));
    }
    let fixed: [(&str, &str); 39] = [
        ("--font-sans", "\"Host Sans\", system-ui, -apple-system, \"Segoe UI\", Roboto, sans-serif"),
        ("--font-mono", "\"Host Mono\", ui-monospace, \"SFMono-Regular\", Menlo, monospace"),
        ("--font-weight-normal", "400"),
        ("--font-weight-medium", "500"),
        ("--font-weight-semibold", "600"),
        ("--font-weight-bold", "700"),
        ("--font-text-xs-size", "0.75rem"),
        ("--font-text-sm-size", "0.875rem"),
        ("--font-text-md-size", "1rem"),
        ("--font-text-lg-size", "1.125rem"),
        ("--font-heading-xs-size", "0.875rem"),
        ("--font-heading-sm-size", "1rem"),
        ("--font-heading-md-size", "1.25rem"),
        ("--font-heading-lg-size", "1.5rem"),
        ("--font-heading-xl-size", "1.875rem"),
        ("--font-heading-2xl-size", "2.25rem"),
        ("--font-heading-3xl-size", "3rem"),
        ("--font-text-xs-line-height", "1rem"),
        ("--font-text-sm-line-height", "1.25rem"),
        ("--font-text-md-line-height", "1.5rem"),
        ("--font-text-lg-line-height", "1.75rem"),
        ("--font-heading-xs-line-height", "1.25rem"),
        ("--font-heading-sm-line-height", "1.5rem"),
        ("--font-heading-md-line-height", "1.75rem"),
        ("--font-heading-lg-line-height", "2rem"),
        ("--font-heading-xl-line-height", "2.25rem"),
        ("--font-heading-2xl-line-height", "2.5rem"),
        ("--font-heading-3xl-line-height", "1"),
        ("--border-radius-xs", "2px"),
        ("--border-radius-sm", "4px"),
        ("--border-radius-md", "8px"),
        ("--border-radius-lg", "12px"),
        ("--border-radius-xl", "16px"),
        ("--border-radius-full", "9999px"),
        ("--border-width-regular", "1px"),
        ("--shadow-hairline", "0 0 0 1px"),
        ("--shadow-sm", "0 1px 2px"),
        ("--shadow-md", "0 4px 12px"),
        ("--shadow-lg", "0 12px 32px"),
    ];
    for (k, v) in fixed {
        let v = if k.starts_with("--shadow-") { format!("{v} {}", p.shadow) } else { v.to_owned() };
        vars.insert(k.to_owned(), json!(v));
    }
    json!({"variables": vars, "css": {"fonts": FONTS_CSS}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_standard_keys_for_both_themes() {
        for theme in [Theme::Light, Theme::Dark] {
            let styles = host_styles(theme);
            let vars = styles["variables"].as_object().unwrap();
            let mut keys: Vec<&str> = vars.keys().map(String::as_str).collect();
            keys.sort_unstable();
            let mut want = STYLE_VARIABLE_KEYS.to_vec();
            want.sort_unstable();
            assert_eq!(keys, want);
            assert!(vars.values().all(|v| v.as_str().is_some_and(|s| !s.is_empty())));
        }
    }

    #[test]
    fn themes_differ_in_colour_only() {
        let (l, d) = (host_styles(Theme::Light), host_styles(Theme::Dark));
        assert_ne!(l["variables"]["--color-background-primary"], d["variables"]["--color-background-primary"]);
        assert_eq!(l["variables"]["--font-sans"], d["variables"]["--font-sans"]);
        assert!(!FONTS_CSS.contains("url("), "fonts must never be fetched");
    }
}
