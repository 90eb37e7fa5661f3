//! Which band changes between two sets of [`Elements`] are transitions. Pure: no disk.
//!
//! What counts: a change of band between two snapshots. An element that first appears amber or
//! red is recorded with no `from` (an element born red is what an alert wants to hear about);
//! one born green is not (every restart would announce the whole fleet). An element that
//! disappears (a card leaving the board or the snapshot's capped listing, a removed agent) is
//! not a transition; a card that recovers is listed once more, so its recovery is one.

use chrono::{DateTime, Utc};
use fleetdash_model::{Band, Transition};

use super::Elements;

/// The band changes from `before` to `after`, in key order, stamped `at`. With no `before`
/// (the first snapshot), every element is new.
pub fn compare(before: Option<&Elements>, after: &Elements, at: DateTime<Utc>) -> Vec<Transition> {
    after
        .iter()
        .filter_map(|(key, now)| {
            let from = match before.and_then(|b| b.get(key)) {
                Some(old) if old.band == now.band => return None,
                Some(old) => Some(old.band),
                None if now.band == Band::Green => return None,
                None => None,
            };
            Some(Transition {
                key: key.clone(),
                kind: now.kind.to_string(),
                name: now.name.clone(),
                from,
                to: now.band,
                at,
                reason: now.reason.clone(),
            })
        })
        .collect()
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::write::transitions::tests::{changes, t0};
    use fleetdash_model::alerts::Element;

    fn element(band: Band, reason: Option<&str>) -> Element {
        Element {
            kind: "agent",
            name: "x".into(),
            band,
            reason: reason.map(Into::into),
        }
    }

    fn elements_of(list: &[(&str, Band)]) -> Elements {
        list.iter()
            .map(|(k, b)| {
                let why = (*b != Band::Green).then_some("why");
                (k.to_string(), element(*b, why))
            })
            .collect()
    }

    /// Red to green, green to amber and an element born red are transitions; one born green,
    /// one removed and one unchanged (whatever its reason says now) are not.
    #[test]
    fn only_band_changes_and_elements_born_amber_or_red_are_transitions() {
        use Band::*;
        let before = elements_of(&[
            ("recovers", Red),
            ("warns", Green),
            ("quiet", Green),
            ("removed", Red),
            ("still-amber", Amber),
        ]);
        let mut after = elements_of(&[
            ("recovers", Green),
            ("warns", Amber),
            ("quiet", Green),
            ("still-amber", Amber),
            ("born-red", Red),
            ("born-green", Green),
        ]);
        after.get_mut("still-amber").unwrap().reason = Some("another reason".into());
        let at = t0();
        let got = compare(Some(&before), &after, at);
        assert_eq!(
            changes(&got),
            [
                ("born-red", None, Red),
                ("recovers", Some(Red), Green),
                ("warns", Some(Green), Amber),
            ]
        );
        assert!(got.iter().all(|t| t.at == at));
        let recovered = &got[1];
        assert_eq!(recovered.reason, None, "green has no reason");
        assert_eq!(got[2].reason.as_deref(), Some("why"));
        // The first snapshot ever: every element is new, and only the non-green count.
        assert_eq!(
            changes(&compare(None, &after, at)),
            [
                ("born-red", None, Red),
                ("still-amber", None, Amber),
                ("warns", None, Amber)
            ]
        );
        assert!(compare(Some(&after), &after, at).is_empty());
    }
}
