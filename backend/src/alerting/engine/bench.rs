//! The engine's test bench: passes driven with a controlled clock (one pass a minute) and the
//! fleet's thresholds, for the tests of every part of the pass.

use chrono::{DateTime, Duration, Utc};
use fleetdash_model::{Band, Snapshot};

use super::gone::{Ended, ended};
use super::pass::{PassContext, Thresholds, pass};
use super::state::{Readings, State, readings};
use crate::alerting::{Alert, AlertEvent};
use crate::config::fleet_alert_rules;
use crate::deps::Deps;
use crate::write::transitions::{self, Elements};
use fleetdash_model::alerts::Element;

pub(super) fn t0() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-30T12:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

pub(super) fn el(kind: &'static str, name: &str, band: Band) -> Element {
    Element {
        kind,
        name: name.into(),
        band,
        reason: (band != Band::Green).then(|| "error: connection refused".into()),
    }
}

/// Drives passes with a controlled clock (one pass a minute) and the fleet's thresholds.
pub(super) struct Bench {
    pub(super) state: State,
    pub(super) now: DateTime<Utc>,
    pub(super) th: Thresholds,
    pub(super) deps: Deps,
    pub(super) silenced: Vec<String>,
    /// The standing acks: per key, the `since` of the alert acked.
    pub(super) acked: crate::alerting::acks::Acked,
    /// The sections' readings the passes see; none: every pass counts every element.
    pub(super) readings: Readings,
    /// What the passes are told was taken away (a dismissed or retired task).
    pub(super) ended: Ended,
}

impl Bench {
    pub(super) fn new() -> Self {
        Bench {
            state: State::default(),
            now: t0(),
            th: Thresholds::from(&fleet_alert_rules()),
            deps: Deps::default(),
            silenced: Vec::new(),
            acked: Default::default(),
            readings: Readings::new(),
            ended: Ended::new(),
        }
    }

    pub(super) fn at(
        &mut self,
        now: DateTime<Utc>,
        elements: &[(&str, Element)],
    ) -> Vec<(String, AlertEvent)> {
        self.now = now;
        self.full(elements)
            .into_iter()
            .map(|a| (a.key, a.event))
            .collect()
    }

    pub(super) fn next(&mut self, elements: &[(&str, Element)]) -> Vec<(String, AlertEvent)> {
        let now = self.now + Duration::minutes(1);
        self.at(now, elements)
    }

    pub(super) fn full(&mut self, elements: &[(&str, Element)]) -> Vec<Alert> {
        let elements: Elements = elements
            .iter()
            .map(|(k, e)| (k.to_string(), e.clone()))
            .collect();
        self.full_elements(elements)
    }

    pub(super) fn full_elements(&mut self, elements: Elements) -> Vec<Alert> {
        let silenced = self.silenced.clone();
        let is_silenced = move |k: &str, _: &Element| silenced.iter().any(|s| s == k);
        let cx = PassContext {
            now: self.now,
            thresholds: self.th,
            deps: &self.deps,
            silenced: &is_silenced,
            acked: &self.acked,
            link: Some("https://dash.example/"),
            readings: &self.readings,
            ended: &self.ended,
        };
        pass(&mut self.state, &elements, &cx)
    }

    /// The sections holding a red that waits for its confirmation after the last pass, over
    /// `elements` as it saw them ([`super::confirm::unconfirmed`]).
    pub(super) fn unconfirmed(
        &self,
        elements: &[(&str, Element)],
    ) -> std::collections::BTreeSet<String> {
        let elements: Elements = elements
            .iter()
            .map(|(k, e)| (k.to_string(), e.clone()))
            .collect();
        let silenced = self.silenced.clone();
        let is_silenced = move |k: &str, _: &Element| silenced.iter().any(|s| s == k);
        let cx = PassContext {
            now: self.now,
            thresholds: self.th,
            deps: &self.deps,
            silenced: &is_silenced,
            acked: &self.acked,
            link: None,
            readings: &self.readings,
            ended: &self.ended,
        };
        super::confirm::unconfirmed(&self.state, &elements, &cx)
    }

    /// A pass over a snapshot as the write side runs it: its elements, its readings and what
    /// it says was taken away.
    pub(super) fn write(&mut self, snap: &Snapshot) -> Vec<Alert> {
        self.readings = readings(snap);
        self.ended = ended(snap);
        self.full_elements(transitions::elements(snap))
    }
}

pub(super) fn fired(key: &str, event: AlertEvent) -> Vec<(String, AlertEvent)> {
    vec![(key.to_string(), event)]
}

pub(super) fn run(b: &mut Bench, els: &[(String, Element)]) -> Vec<Alert> {
    b.now += Duration::minutes(1);
    let refs: Vec<(&str, Element)> = els.iter().map(|(k, e)| (k.as_str(), e.clone())).collect();
    b.full(&refs)
}
