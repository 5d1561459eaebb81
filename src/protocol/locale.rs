//! `hostContext.locale` and `hostContext.timeZone` from what the system reports.
//!
//! Views hand these straight to `Intl` (`new Intl.DateTimeFormat(locale, {timeZone})`), which
//! throws a `RangeError` on anything that is not a BCP 47 language tag or an IANA time zone name.
//! POSIX systems report locales such as `C.UTF-8` or `de_DE.UTF-8@euro`, so they are mapped, and
//! whatever still does not look right becomes the fallback instead of breaking the View.

/// The locale sent when the system's cannot be mapped to a BCP 47 tag.
pub const FALLBACK_LOCALE: &str = "en-US";

/// The time zone sent when the system's is not an IANA name.
pub const FALLBACK_TIME_ZONE: &str = "UTC";

/// A BCP 47 language tag for a POSIX locale name (`LANG`-style, or already half-converted):
/// `C` and `POSIX` are `en-US`; the codeset (`.UTF-8`) and modifier (`@euro`) go; `_` becomes
/// `-`; subtags get their canonical case. `None` or anything that is not then a well-formed tag
/// gives [`FALLBACK_LOCALE`].
pub fn bcp47_locale(posix: Option<&str>) -> String {
    let Some(raw) = posix.map(str::trim).filter(|s| !s.is_empty()) else {
        return FALLBACK_LOCALE.to_owned();
    };
    let base = raw.split(['.', '@']).next().unwrap_or_default();
    if base.eq_ignore_ascii_case("C") || base.eq_ignore_ascii_case("POSIX") {
        return FALLBACK_LOCALE.to_owned();
    }
    let subtags: Vec<&str> = base.split(['_', '-']).collect();
    canonical_tag(&subtags).unwrap_or_else(|| FALLBACK_LOCALE.to_owned())
}

/// `language[-script][-region][-variant]*` (the Unicode locale identifier subset of BCP 47 that
/// ECMA-402's `IsStructurallyValidLanguageTag` accepts), in canonical case; `None` when the
/// subtags do not form one.
fn canonical_tag(subtags: &[&str]) -> Option<String> {
    let alpha = |s: &str| s.bytes().all(|b| b.is_ascii_alphabetic());
    let alnum = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric());
    let (language, mut rest) = subtags.split_first()?;
    // 4-letter language subtags are reserved; `Intl` refuses them.
    if !(alpha(language) && matches!(language.len(), 2 | 3 | 5..=8)) {
        return None;
    }
    let mut out = vec![language.to_ascii_lowercase()];
    if let Some((script, tail)) = rest.split_first().filter(|(s, _)| s.len() == 4 && alpha(s)) {
        let mut s = script.to_ascii_lowercase();
        s[..1].make_ascii_uppercase();
        out.push(s);
        rest = tail;
    }
    if let Some((region, tail)) = rest
        .split_first()
        .filter(|(r, _)| (r.len() == 2 && alpha(r)) || (r.len() == 3 && r.bytes().all(|b| b.is_ascii_digit())))
    {
        out.push(region.to_ascii_uppercase());
        rest = tail;
    }
    let mut variants: Vec<String> = Vec::new();
    for variant in rest {
        let ok = alnum(variant)
            && (matches!(variant.len(), 5..=8) || (variant.len() == 4 && variant.as_bytes()[0].is_ascii_digit()));
        let variant = variant.to_ascii_lowercase();
        // A repeated variant is a structural error for `Intl`.
        if !ok || variants.contains(&variant) {
            return None;
        }
        variants.push(variant);
    }
    out.extend(variants);
    Some(out.join("-"))
}

/// The IANA time zone name the system reported, when it has the shape of one (`Area/Location`
/// segments of letters, digits, `_`, `-`, `+`, each starting with a letter, or a bare name such
/// as `UTC`); a `posix/` or `right/` zoneinfo prefix is dropped. Otherwise [`FALLBACK_TIME_ZONE`].
pub fn iana_time_zone(name: Option<&str>) -> String {
    let Some(name) = name.map(str::trim) else {
        return FALLBACK_TIME_ZONE.to_owned();
    };
    let name = name.strip_prefix("posix/").or_else(|| name.strip_prefix("right/")).unwrap_or(name);
    let segment_ok = |s: &str| {
        (1..=32).contains(&s.len())
            && s.as_bytes()[0].is_ascii_alphabetic()
            && s.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+'))
    };
    if name.len() <= 64 && name.split('/').count() <= 3 && name.split('/').all(segment_ok) {
        name.to_owned()
    } else {
        FALLBACK_TIME_ZONE.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posix_locales_become_bcp47_tags() {
        let table: &[(Option<&str>, &str)] = &[
            (Some("C"), "en-US"),
            (Some("C.UTF-8"), "en-US"),
            (Some("C.utf8"), "en-US"),
            (Some("POSIX"), "en-US"),
            (Some("en_US.UTF-8"), "en-US"),
            (Some("de_DE.UTF-8@euro"), "de-DE"),
            (Some("de_DE@euro"), "de-DE"),
            (Some("sr_RS@latin"), "sr-RS"),
            (Some("fr_CA"), "fr-CA"),
            (Some("pt_BR.ISO-8859-1"), "pt-BR"),
            (Some("zh_Hant_TW.UTF-8"), "zh-Hant-TW"),
            (Some("es_419"), "es-419"),
            (Some("ja"), "ja"),
            (Some("ast_ES.UTF-8"), "ast-ES"),
            (Some("ca_ES_VALENCIA"), "ca-ES-valencia"),
            (Some("EN_us"), "en-US"),
            (Some("en-US"), "en-US"),
            // What sys-locale hands over for `LANG=C.UTF-8` and `LANG=POSIX`.
            (Some("C"), "en-US"),
            (Some("POSIX"), "en-US"),
            // Not mappable: the fallback, never something `Intl` throws on.
            (None, "en-US"),
            (Some(""), "en-US"),
            (Some("   "), "en-US"),
            (Some("e"), "en-US"),
            (Some("engl_US"), "en-US"),
            (Some("en_USA"), "en-US"),
            (Some("en_US_x"), "en-US"),
            (Some("en_US_posix_posix"), "en-US"),
            (Some("de DE"), "en-US"),
            (Some("../../etc"), "en-US"),
            (Some("ü_DE"), "en-US"),
        ];
        for (posix, want) in table {
            assert_eq!(bcp47_locale(*posix), *want, "{posix:?}");
        }
    }

    #[test]
    fn time_zones_must_look_like_iana_names() {
        for good in ["UTC", "Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "America/Port-au-Prince"] {
            assert_eq!(iana_time_zone(Some(good)), good);
        }
        assert_eq!(iana_time_zone(Some("posix/Europe/Berlin")), "Europe/Berlin");
        assert_eq!(iana_time_zone(Some("right/UTC")), "UTC");
        for bad in
            ["", "/etc/localtime", "Europe/../Berlin", "Europe//Berlin", "UTC+01:00", "1Zone", "a/b/c/d", "Zürich"]
        {
            assert_eq!(iana_time_zone(Some(bad)), "UTC", "{bad:?}");
        }
        assert_eq!(iana_time_zone(None), "UTC");
    }
}
