//! The colour band every element is judged into, with its word, icon and CSS class (colour is
//! never the only signal), and how the rules' thresholds pick it.

use serde::{Deserialize, Serialize};

use crate::rules::RulesView;

/// Colour band. Every band also has a word, so colour is never the only signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Band {
    Green,
    Amber,
    Red,
}

impl Band {
    /// The word shown beside the colour.
    pub fn word(self) -> &'static str {
        match self {
            Band::Green => "ok",
            Band::Amber => "warn",
            Band::Red => "fail",
        }
    }

    /// The icon shown beside the colour.
    pub fn icon(self) -> &'static str {
        match self {
            Band::Green => "✔",
            Band::Amber => "▲",
            Band::Red => "✖",
        }
    }

    /// The CSS class of the band.
    pub fn class(self) -> &'static str {
        match self {
            Band::Green => "green",
            Band::Amber => "amber",
            Band::Red => "red",
        }
    }

    /// The band for a backup of this age under the rules' thresholds.
    pub fn for_backup_age(age_s: u64, rules: &RulesView) -> Band {
        if age_s >= rules.backup_red_after_s {
            Band::Red
        } else if age_s >= rules.backup_amber_after_s {
            Band::Amber
        } else {
            Band::Green
        }
    }

    /// The band for a model usage window at `percent` of its limit: amber at or above the
    /// rules' threshold (a snapshot without the rule judges nothing).
    pub fn for_window_percent(percent: f64, rules: &RulesView) -> Band {
        let threshold = rules.window_amber_at_percent;
        if threshold > 0 && percent >= threshold as f64 {
            Band::Amber
        } else {
            Band::Green
        }
    }

    /// The band for a last-exchange age under the rules' thresholds (spec §5.2).
    pub fn for_exchange_age(age_s: u64, rules: &RulesView) -> Band {
        if age_s < rules.exchange_green_below_s {
            Band::Green
        } else if age_s < rules.exchange_amber_below_s {
            Band::Amber
        } else {
            Band::Red
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::tests::rules;
    use crate::snapshot::Window;

    #[test]
    fn exchange_bands_follow_the_rules_thresholds() {
        let r = rules();
        assert_eq!(Band::for_exchange_age(0, &r), Band::Green);
        assert_eq!(Band::for_exchange_age(1799, &r), Band::Green);
        assert_eq!(Band::for_exchange_age(1800, &r), Band::Amber);
        assert_eq!(Band::for_exchange_age(21599, &r), Band::Amber);
        assert_eq!(Band::for_exchange_age(21600, &r), Band::Red);
    }

    #[test]
    fn a_window_is_amber_from_the_rules_percentage_and_judged_by_nothing_without_it() {
        let r = rules();
        assert_eq!(Band::for_window_percent(89.9, &r), Band::Green);
        assert_eq!(Band::for_window_percent(90.0, &r), Band::Amber);
        assert_eq!(Band::for_window_percent(100.0, &r), Band::Amber);
        // A snapshot from before the rule: the view reads 0, and no window is judged by it.
        let mut json = serde_json::to_value(&r).unwrap();
        json.as_object_mut()
            .unwrap()
            .remove("window_amber_at_percent");
        let old: RulesView = serde_json::from_value(json).unwrap();
        assert_eq!(Band::for_window_percent(99.0, &old), Band::Green);
        // A window from before its band is green, as it was shown then.
        let w: Window = serde_json::from_str(
            r#"{"model": "m", "percent": 93.0, "status": "near limit", "resets_at": "unknown"}"#,
        )
        .unwrap();
        assert_eq!(w.band, Band::Green);
    }
}
