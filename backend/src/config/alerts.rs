//! The config's alerting parts (issue 12): `depends_on` on an agent or a host, naming the
//! elements it depends on by their transitions-log keys (`host:lab`, `host:lab/tunnel:lab-heart`,
//! `agent:hub`), so an alert about it is held back while its root cause is down.

use std::collections::BTreeMap;

use super::table::Table;
use super::validator::Validator;

/// Reads `depends_on` of the entry keyed `key` into `out`; an entry that is not a key (no
/// `kind:name`) is an error naming its index.
pub(super) fn depends_on(
    v: &mut Validator,
    t: &mut Table,
    key: Option<String>,
    out: &mut BTreeMap<String, Vec<String>>,
) {
    let Some(list) = t.strings(v, "depends_on") else {
        return;
    };
    let mut roots = Vec::new();
    for (j, root) in list.into_inner() {
        let text = root.get_ref().trim();
        let well_formed = text.split('/').all(|part| {
            part.split_once(':')
                .is_some_and(|(k, n)| !k.is_empty() && !n.is_empty())
        });
        if well_formed {
            roots.push(text.to_string());
        } else {
            v.error(
                &root,
                t.field(&format!("depends_on[{j}]")),
                format!(
                    "{text:?} is not an element key; expected e.g. \"host:lab\" or \"host:lab/tunnel:lab-heart\""
                ),
            );
        }
    }
    if let Some(key) = key
        && !roots.is_empty()
    {
        out.insert(key, roots);
    }
}
