//! What each value of the rules file measures, and so which values it may take.

/// What a value of the rules file measures, and so which values it may take.
#[derive(Clone, Copy)]
pub(super) enum Unit {
    /// A whole number of seconds greater than zero.
    Seconds,
    /// A whole number of passes, at least one.
    Count,
    /// A whole number of re-probes, none (0) or more.
    Reprobes,
    /// A whole percentage from 1 to 100.
    Percent,
    /// A whole number of cards, at least 1.
    Cards,
    /// A whole number of tasks, at least 1.
    Tasks,
    /// A whole number of copies of a file, at least 1.
    Copies,
    /// A whole number of entries of a log, from 1 to [`MAX_ITEMS`].
    Entries,
    /// A whole number of pending alerts, from 1 to [`MAX_ITEMS`].
    Items,
    /// A size of a file in bytes, from [`MIN_BYTES`] to [`MAX_BYTES`].
    Bytes,
    /// A whole number of needs-you lines, at least 2 (one line folds into nothing).
    Lines,
}

/// The most entries or items a bound of the rules file may allow: past it, a bound bounds
/// nothing a month of state can reach.
const MAX_ITEMS: u64 = 1_000_000;
/// The smallest size a file's bound may declare (one entry of a log must fit) ...
const MIN_BYTES: u64 = 4096;
/// ... and the largest (1 GiB: a state file fleetdash keeps is never meant to reach it).
const MAX_BYTES: u64 = 1 << 30;

impl Unit {
    pub(super) fn accepts(self, value: u64) -> bool {
        match self {
            // A window is added to and taken from times: within the horizon it never overflows.
            Unit::Seconds => value > 0 && value <= crate::clock::HORIZON.as_secs(),
            Unit::Count | Unit::Cards | Unit::Tasks | Unit::Copies => value > 0,
            Unit::Lines => value >= 2,
            // Bounded by `alerts.fail_after_passes` (checked with it): a red that fired asks
            // for no re-probe.
            Unit::Reprobes => true,
            Unit::Percent => (1..=100).contains(&value),
            Unit::Entries | Unit::Items => (1..=MAX_ITEMS).contains(&value),
            Unit::Bytes => (MIN_BYTES..=MAX_BYTES).contains(&value),
        }
    }

    pub(super) fn expected(self) -> &'static str {
        match self {
            Unit::Seconds => {
                "expected a whole number of seconds from 1 to 31622400 (366 d, the longest span \
                 fleetdash takes)"
            }
            Unit::Percent => "expected a whole percentage from 1 to 100",
            Unit::Count => "expected a whole number of passes, at least 1",
            Unit::Reprobes => "expected a whole number of re-probes, 0 (none) or more",
            Unit::Cards => "expected a whole number of cards, at least 1",
            Unit::Tasks => "expected a whole number of tasks, at least 1",
            Unit::Copies => "expected a whole number of copies, at least 1",
            Unit::Lines => "expected a whole number of lines, at least 2",
            Unit::Entries => "expected a whole number of entries from 1 to 1000000",
            Unit::Items => "expected a whole number of alerts from 1 to 1000000",
            Unit::Bytes => {
                "expected a whole number of bytes from 4096 to 1073741824 (4 KiB to 1 GiB)"
            }
        }
    }
}
