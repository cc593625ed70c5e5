//! `driftd history --drift`: the drift episodes the database recorded, newest first: the
//! object, its class, when its drift began and ended, who changed it (the field managers of
//! the drifting fields) and how it ended. The same episodes as `GET /history`.

use super::super::common::table::{human_age, render_table};
use super::super::Format;
use driftd_core::report::{DriftClass, DriftFilter};
use driftd_store::{EpisodeRecord, HistoryQuery, Store};
use jiff::Timestamp;

/// The filters and window of `--drift`, as given.
pub struct DriftArgs<'a> {
    pub source: Option<&'a str>,
    pub namespace: Option<&'a str>,
    pub kind: Option<&'a str>,
    pub class: Option<&'a str>,
    pub since: Option<&'a str>,
    pub until: Option<&'a str>,
    pub limit: usize,
}

fn time(flag: &str, value: Option<&str>) -> anyhow::Result<Option<Timestamp>> {
    value
        .map(|v| {
            v.parse().map_err(|_| {
                anyhow::anyhow!(
                    "--{flag} must be an RFC 3339 time such as 2026-12-01T00:00:00Z, not {v:?}"
                )
            })
        })
        .transpose()
}

/// The query `args` asks for; a bad class or time is named before the database is read.
pub fn query(args: &DriftArgs) -> anyhow::Result<HistoryQuery> {
    let class = args.class.map(str::parse::<DriftClass>).transpose()?;
    let query = HistoryQuery {
        filter: DriftFilter {
            source: args.source.map(str::to_string),
            namespace: args.namespace.map(str::to_string),
            kind: args.kind.map(str::to_string),
            class,
        },
        since: time("since", args.since)?,
        until: time("until", args.until)?,
        limit: args.limit,
    };
    if let (Some(since), Some(until)) = (query.since, query.until) {
        anyhow::ensure!(
            since <= until,
            "--since ({since}) is after --until ({until})"
        );
    }
    Ok(query)
}

pub fn run(store: &Store, args: &DriftArgs, format: Format) -> anyhow::Result<()> {
    let episodes = store.episode_history(&query(args)?)?;
    match format {
        Format::Json => println!("{}", serde_json::to_string_pretty(&episodes)?),
        Format::Table => print!("{}", table(&episodes, store.now())),
    }
    Ok(())
}

/// `Kind/namespace/name`, or `Kind/name` for a cluster-scoped object.
fn object(record: &EpisodeRecord) -> String {
    let key = &record.object;
    match &key.namespace {
        Some(ns) => format!("{}/{ns}/{}", key.kind, key.name),
        None => format!("{}/{}", key.kind, key.name),
    }
}

/// How it ended, and by whom when known: `reverted by kubectl-edit`, `open`.
fn ended(record: &EpisodeRecord) -> String {
    match (record.closed_at, record.ended, &record.ended_by) {
        (None, _, _) => "open".into(),
        (Some(_), None, _) => "closed".into(),
        (Some(_), Some(how), Some(by)) => format!("{} by {by}", how.as_str()),
        (Some(_), Some(how), None) => how.as_str().into(),
    }
}

pub fn table(episodes: &[EpisodeRecord], now: Timestamp) -> String {
    let mut rows = vec![[
        "OPENED", "SOURCE", "OBJECT", "CLASS", "WHO", "LASTED", "ENDED",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect::<Vec<_>>()];
    for e in episodes {
        // The person when an audit event named them, with the tool they used.
        let who: Vec<String> = e
            .who
            .iter()
            .map(|w| match (&w.user, w.manager.as_str()) {
                (Some(user), "") => user.clone(),
                (Some(user), manager) => format!("{user} ({manager})"),
                (None, manager) => manager.to_string(),
            })
            .collect();
        rows.push(vec![
            human_age(now, e.opened_at),
            e.source.clone(),
            object(e),
            e.class.clone(),
            if who.is_empty() {
                "-".into()
            } else {
                who.join(",")
            },
            human_age(e.closed_at.unwrap_or(now), e.opened_at),
            ended(e),
        ]);
    }
    if episodes.is_empty() {
        return "no drift episodes recorded\n".into();
    }
    render_table(&rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use driftd_k8s::ObjectKey;
    use driftd_store::{Changer, EpisodeEnd};

    fn record(name: &str, closed: Option<&str>, ended: Option<EpisodeEnd>) -> EpisodeRecord {
        EpisodeRecord {
            source: "shop".into(),
            object: ObjectKey {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: Some("shop".into()),
                name: name.into(),
            },
            class: "modified".into(),
            opened_at: "2026-12-01T10:00:00Z".parse().unwrap(),
            last_seen: "2026-12-01T10:00:00Z".parse().unwrap(),
            closed_at: closed.map(|c| c.parse().unwrap()),
            paths: vec!["/spec/replicas".into()],
            who: vec![Changer {
                manager: "kubectl-edit".into(),
                changed_at: None,
                user: (name == "web").then(|| "alice@example.com".into()),
            }],
            ended,
            ended_by: ended.map(|_| "kubectl-client-side-apply".into()),
        }
    }

    #[test]
    fn the_table_says_who_how_long_and_how_each_episode_ended() {
        let now = "2026-12-01T12:00:00Z".parse().unwrap();
        let text = table(
            &[
                record("api", None, None),
                record(
                    "web",
                    Some("2026-12-01T10:30:00Z"),
                    Some(EpisodeEnd::Reverted),
                ),
            ],
            now,
        );
        let lines: Vec<Vec<&str>> = text
            .lines()
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            lines,
            [
                vec!["OPENED", "SOURCE", "OBJECT", "CLASS", "WHO", "LASTED", "ENDED"],
                vec![
                    "120m",
                    "shop",
                    "Deployment/shop/api",
                    "modified",
                    "kubectl-edit",
                    "120m",
                    "open"
                ],
                vec![
                    "120m",
                    "shop",
                    "Deployment/shop/web",
                    "modified",
                    "alice@example.com",
                    "(kubectl-edit)",
                    "30m",
                    "reverted",
                    "by",
                    "kubectl-client-side-apply"
                ],
            ],
            "{text}"
        );
    }

    #[test]
    fn bad_flags_are_named() {
        let args = |class, since, until| DriftArgs {
            source: None,
            namespace: None,
            kind: None,
            class,
            since,
            until,
            limit: 10,
        };
        let err = query(&args(Some("modifed"), None, None)).unwrap_err();
        assert!(err.to_string().contains("unknown class `modifed`"), "{err}");
        let err = query(&args(None, Some("monday"), None)).unwrap_err();
        assert!(
            err.to_string().contains("--since must be an RFC 3339 time"),
            "{err}"
        );
        let err = query(&args(
            None,
            Some("2026-12-02T00:00:00Z"),
            Some("2026-12-01T00:00:00Z"),
        ))
        .unwrap_err();
        assert!(err.to_string().contains("is after --until"), "{err}");
    }
}
