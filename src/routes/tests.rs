use super::*;

#[test]
fn patterns_match_whole_segments() {
    assert_eq!(matches("/api/stats", "/api/stats"), Some(vec![]));
    assert_eq!(matches("/api/stats", "/api/stats/"), Some(vec![]));
    assert_eq!(matches("/api/stats", "/api/statsx"), None);
    assert_eq!(matches("/api/stats", "/api"), None);
    assert_eq!(
        matches("/api/accounts/:name/pause", "/api/accounts/work/pause"),
        Some(vec!["work"])
    );
    assert_eq!(
        matches("/api/accounts/:name/pause", "/api/accounts//pause"),
        None
    );
    assert_eq!(
        matches("/api/activity/:id/retry", "/api/activity/7/retry/x"),
        None
    );
    assert_eq!(matches("/", "/"), Some(vec![]));
    assert_eq!(matches("/", "/activity"), None);
}

#[test]
fn every_route_is_written_once_with_the_access_of_its_kind() {
    let mut seen = std::collections::HashSet::new();
    for r in ROUTES {
        assert!(
            seen.insert((r.method, r.pattern)),
            "{} {}",
            r.method,
            r.pattern
        );
        assert!(r.pattern.starts_with('/'), "{}", r.pattern);
        if r.pattern.starts_with("/api/") {
            assert!(
                matches!(r.access, Needs(_)),
                "{} is under /api but needs no permission",
                r.pattern
            );
        }
        // The handler's kind fits the access: API handlers answer JSON
        // rows, page handlers the dashboard's.
        let fits = match r.handler {
            Api(_) | ApiOr(..) => !r.access.is_page(),
            Page(_) => matches!(r.access, Access::Session | Form),
            Open(_) => matches!(r.access, Asset | Access::Setup | SignIn),
        };
        assert!(
            fits,
            "{} {}: handler and access disagree",
            r.method, r.pattern
        );
        if r.access == Form {
            assert_eq!(r.method, "POST", "{}", r.pattern);
        }
    }
}
