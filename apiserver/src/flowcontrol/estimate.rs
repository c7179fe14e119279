//! How many seats a request takes, after kube-apiserver's work estimator
//! (`k8s.io/apiserver/pkg/util/flowcontrol/request`): one seat, except LISTs (and watches
//! that send initial events), which take one seat per hundred objects they are expected to
//! read, at most ten. kplane keeps no object counts for this estimate, so a LIST with a
//! `limit` is charged for reading twice that many objects (upstream's rule for a LIST
//! served from storage) and a LIST without one the maximum; a LIST of one name
//! (`fieldSelector=metadata.name=...`) takes one seat.

use kplane_types::{RequestInfo, Verb};

/// The fewest seats a request takes.
pub const MIN_SEATS: u32 = 1;
/// The most seats a request takes (upstream's `maximumSeatsLimit`).
pub const MAX_SEATS: u32 = 10;
/// Objects a seat pays for (upstream's `objectsPerSeat`).
const OBJECTS_PER_SEAT: u64 = 100;

/// The seats of a request with attributes `info` and query string `query`.
pub fn seats(info: &RequestInfo, query: Option<&str>) -> u32 {
    let listing = match info.verb {
        Verb::List => true,
        Verb::Watch => param(query, "sendInitialEvents").as_deref() == Some("true"),
        _ => false,
    };
    if !listing || info.name.is_some() {
        return MIN_SEATS;
    }
    if param(query, "fieldSelector").is_some_and(|s| names_one_object(&s)) {
        return MIN_SEATS;
    }
    let limit = param(query, "limit")
        .and_then(|l| l.parse::<i64>().ok())
        .filter(|l| *l > 0);
    match limit {
        Some(limit) => {
            let objects = (limit as u64).saturating_mul(2);
            let seats = objects.div_ceil(OBJECTS_PER_SEAT);
            seats.clamp(MIN_SEATS as u64, MAX_SEATS as u64) as u32
        }
        None => MAX_SEATS,
    }
}

/// Whether a field selector is `metadata.name=<x>` (or `==`) alone.
fn names_one_object(selector: &str) -> bool {
    !selector.contains(',')
        && !selector.contains("!=")
        && (selector.starts_with("metadata.name=") || selector.starts_with("metadata.name=="))
}

/// The first value of query parameter `key`.
pub fn param(query: Option<&str>, key: &str) -> Option<String> {
    form_urlencoded::parse(query?.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::ClusterScope;

    fn info(verb: Verb, name: Option<&str>) -> RequestInfo {
        let mut i = RequestInfo::non_resource(ClusterScope::Wildcard, verb, "/api/v1/configmaps");
        i.is_resource_request = true;
        i.resource = "configmaps".into();
        i.name = name.map(str::to_string);
        i
    }

    #[test]
    fn lists_are_charged_by_their_page_as_upstream_charges_storage_lists() {
        let list = info(Verb::List, None);
        assert_eq!(seats(&list, Some("limit=1")), 1);
        assert_eq!(seats(&list, Some("limit=50")), 1);
        assert_eq!(seats(&list, Some("limit=51")), 2);
        assert_eq!(seats(&list, Some("limit=250")), 5);
        assert_eq!(seats(&list, Some("limit=500")), 10);
        assert_eq!(seats(&list, Some("limit=5000")), 10);
        assert_eq!(seats(&list, None), MAX_SEATS);
        assert_eq!(seats(&list, Some("limit=0")), MAX_SEATS);
        assert_eq!(seats(&list, Some("limit=-3")), MAX_SEATS);
        assert_eq!(seats(&list, Some("limit=x")), MAX_SEATS);
    }

    #[test]
    fn one_object_and_everything_else_takes_one_seat() {
        let list = info(Verb::List, None);
        assert_eq!(seats(&list, Some("fieldSelector=metadata.name%3Dx")), 1);
        assert_eq!(seats(&list, Some("fieldSelector=metadata.name%3D%3Dx")), 1);
        assert_eq!(
            seats(&list, Some("fieldSelector=metadata.name%21%3Dx")),
            MAX_SEATS
        );
        assert_eq!(
            seats(
                &list,
                Some("fieldSelector=metadata.name%3Dx,metadata.namespace%3Dy")
            ),
            MAX_SEATS
        );
        for verb in [
            Verb::Get,
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
        ] {
            assert_eq!(seats(&info(verb, Some("x")), None), 1);
        }
        assert_eq!(seats(&info(Verb::Watch, None), Some("watch=1")), 1);
        assert_eq!(
            seats(
                &info(Verb::Watch, None),
                Some("watch=1&sendInitialEvents=true")
            ),
            MAX_SEATS
        );
    }
}
