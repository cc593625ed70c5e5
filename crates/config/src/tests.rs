use super::*;
use std::io::Write;

fn file(text: &str) -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    f.write_all(text.as_bytes()).unwrap();
    f
}

#[test]
fn example_config_parses_to_the_defaults() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config.example.toml");
    let loaded = Config::load_with_env(Some(&path), |_| None).unwrap();
    assert_eq!(loaded, Config::default());
}

#[test]
fn file_then_environment_override_defaults() {
    let f = file("database = \"/var/lib/driftd/x.db\"\n[metrics]\nmax_object_series = 5\n");
    let c = Config::load_with_env(Some(f.path()), |k| {
        (k == "DRIFTD_SETTLE_SECONDS").then(|| "0.5".to_string())
    })
    .unwrap();
    assert_eq!(c.database, PathBuf::from("/var/lib/driftd/x.db"));
    assert_eq!(c.metrics.max_object_series, 5);
    assert_eq!(c.settle_seconds, 0.5);
    assert_eq!(c.listen, Config::default().listen);
}

#[test]
fn key_files_come_from_the_file_or_the_environment() {
    let f = file(
        "[secrets]\nencryption_key_file = \"/keys/new\"\n\
         previous_encryption_key_files = [\"/keys/old\"]\n",
    );
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert_eq!(
        c.secrets.encryption_key_file,
        Some(PathBuf::from("/keys/new"))
    );
    assert_eq!(
        c.secrets.previous_encryption_key_files,
        [PathBuf::from("/keys/old")]
    );
    assert_eq!(c.secrets.hash_key_file, None);
    let c = Config::load_with_env(Some(f.path()), |k| match k {
        "DRIFTD_SECRETS_PREVIOUS_ENCRYPTION_KEY_FILES" => Some("/keys/a, /keys/b".into()),
        "DRIFTD_SECRETS_HASH_KEY_FILE" => Some("/keys/hash".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(
        c.secrets.previous_encryption_key_files,
        [PathBuf::from("/keys/a"), PathBuf::from("/keys/b")]
    );
    assert_eq!(c.secrets.hash_key_file, Some(PathBuf::from("/keys/hash")));
    let err = c.secrets.load_keys().unwrap_err().to_string();
    assert!(err.contains("/keys/hash"), "{err}");
}

#[test]
fn leader_election_keys_load_and_follow_client_go_rules() {
    let f = file("[leader_election]\nlease_duration_seconds = 3\nrenew_deadline_seconds = 2\nretry_period_seconds = 0.5\n");
    let c = Config::load_with_env(Some(f.path()), |k| match k {
        "DRIFTD_NAMESPACE" => Some("ops".into()),
        "DRIFTD_LEADER_ELECTION_ENABLED" => Some("false".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(c.namespace, "ops");
    assert!(!c.leader_election.enabled);
    assert_eq!(c.leader_election.lease_duration(), Duration::from_secs(3));
    assert_eq!(c.leader_election.retry_period(), Duration::from_millis(500));

    // The leader must give up before a follower may take over ...
    let f = file("[leader_election]\nlease_duration_seconds = 10\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "leader_election.renew_deadline_seconds");
    assert!(
        err.reason.contains("less than lease_duration_seconds"),
        "{err}"
    );
    // ... and gets more than one try first.
    let f = file("[leader_election]\nretry_period_seconds = 9\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "leader_election.renew_deadline_seconds");
    assert!(err.reason.contains("retry_period_seconds"), "{err}");
    // The Lease holds whole seconds.
    let f = file("[leader_election]\nlease_duration_seconds = 2.5\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "leader_election.lease_duration_seconds");
}

#[test]
fn lock_keys_take_durations_as_people_write_them() {
    let f =
        file("[locks]\nauto_release_after = \"30m\"\n[pulumi]\nlock_dirs = [\"/srv/pulumi\"]\n");
    let c = Config::load_with_env(Some(f.path()), |k| {
        (k == "DRIFTD_PULUMI_MAX_LOCK_AGE").then(|| "1h30m".to_string())
    })
    .unwrap();
    assert_eq!(c.locks.auto_release_after, Some(Duration::from_secs(1800)));
    assert_eq!(c.pulumi.lock_dirs, [PathBuf::from("/srv/pulumi")]);
    assert_eq!(c.pulumi.max_lock_age, Duration::from_secs(5400));
    assert_eq!(
        Config::default().locks.auto_release_after,
        None,
        "off by default"
    );

    let f = file("[locks]\nauto_release_after = \"half an hour\"\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "locks.auto_release_after");
    assert!(err.reason.contains("30m"), "{err}");
    let f = file("[pulumi]\nmax_lock_age = \"0s\"\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "pulumi.max_lock_age");
}

#[test]
fn unmanaged_kinds_resolve_to_watch_types() {
    let u = UnmanagedConfig {
        kinds: vec![
            "Deployment".into(),
            "example.com/v1/Widget".into(),
            "v1/ConfigMap".into(),
        ],
        namespaces: vec![],
    };
    let keys = u.type_keys().unwrap();
    assert_eq!(keys[0].api_version, "apps/v1");
    assert_eq!(keys[1].api_version, "example.com/v1");
    assert_eq!(keys[1].kind, "Widget");
    assert_eq!(keys[2].api_version, "v1");
    assert!(matches!(
        parse_kind("Event"),
        Err(KindError::Ambiguous { .. })
    ));
}

#[test]
fn errors_name_the_key() {
    let f = file("[metrics]\nmax_object_serie = 5\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert!(err.to_string().contains("max_object_serie"), "{err}");

    let f = file("listen = \"not an address\"\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "listen");

    let err = Config::load_with_env(None, |k| {
        (k == "DRIFTD_SETTLE_SECONDS").then(|| "-1".to_string())
    })
    .unwrap_err();
    assert_eq!(err.key, "settle_seconds");

    let f = file("[[ignore]]\nkind = \"Deployment\"\npointers = [\"spec/replicas\"]\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert!(err.key.starts_with("ignore[0]"), "{err}");
    assert!(err.to_string().contains("pointers"), "{err}");

    let f = file("[unmanaged]\nkinds = [\"Widget\"]\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "unmanaged.kinds");
    assert!(err.reason.contains("apiVersion/Kind"), "{err}");

    let err = Config::load_with_env(None, |k| {
        (k == "DRIFTD_EVENTS_ENABLED").then(|| "maybe".to_string())
    })
    .unwrap_err();
    assert_eq!(err.key, "events.enabled");
    assert!(err.origin.contains("DRIFTD_EVENTS_ENABLED"), "{err}");
}

#[test]
fn sources_choose_dry_run_and_bad_dry_run_settings_name_their_key() {
    let f = file("[[sources]]\nname = \"shop\"\ncompare = \"dry-run\"\n[[sources]]\nname = \"web\"\n[dry_run]\nrefresh_seconds = 60\n");
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert_eq!(
        c.dry_run_sources().into_iter().collect::<Vec<_>>(),
        ["shop"]
    );
    assert_eq!(c.dry_run.refresh(), Duration::from_secs(60));

    let f = file("[[sources]]\nname = \"shop\"\ncompare = \"dryrun\"\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "sources[0].compare");
    let f = file("[[sources]]\nname = \"shop\"\n[[sources]]\nname = \"shop\"\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "sources[1].name");
    let err = Config::load_with_env(None, |k| {
        (k == "DRIFTD_DRY_RUN_MAX_PER_SECOND").then(|| "0".to_string())
    })
    .unwrap_err();
    assert_eq!(err.key, "dry_run.max_per_second");
}

#[test]
fn helm_is_on_in_every_namespace_with_a_15_minute_stale_lock_by_default() {
    let c = Config::default();
    assert!(c.helm.enabled);
    assert!(c.helm.namespaces.is_empty());
    assert_eq!(c.helm.stale_after, Duration::from_secs(900));
    let f = file("[helm]\nnamespaces = [\"shop\", \"ci\"]\nstale_after = \"1h\"\n");
    let c = Config::load_with_env(Some(f.path()), |k| {
        (k == "DRIFTD_HELM_ENABLED").then(|| "false".to_string())
    })
    .unwrap();
    assert!(!c.helm.enabled);
    assert_eq!(c.helm.namespaces, ["shop", "ci"]);
    assert_eq!(c.helm.stale_after, Duration::from_secs(3600));

    let f = file("[helm]\nnamespaces = [\"Shop\"]\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "helm.namespaces");
    assert!(err.reason.contains("\"Shop\""), "{err}");
    let f = file("[helm]\nstale_after = \"200h\"\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "helm.stale_after");
}

#[test]
fn remediation_is_off_by_default_and_set_per_source() {
    let c = Config::default();
    assert!(c.remediated_sources().is_empty());
    let f = file(
        "[[sources]]\nname = \"helm:shop/web\"\nremediation = \"auto\"\n\
         [[sources]]\nname = \"other\"\ncompare = \"dry-run\"\n\
         [remediation]\nmax_per_minute = 6\n",
    );
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert_eq!(
        c.remediated_sources().into_iter().collect::<Vec<_>>(),
        ["helm:shop/web"]
    );
    assert_eq!(c.remediation.max_per_minute, 6.0);
    assert!(c.remediation.force_conflicts);
    for (text, key) in [
        (
            "[[sources]]\nname = \"a\"\nremediation = \"always\"\n",
            "sources[0].remediation",
        ),
        (
            "[remediation]\nmax_per_minute = 0\n",
            "remediation.max_per_minute",
        ),
        (
            "[remediation]\nretry_seconds = 0.5\n",
            "remediation.retry_seconds",
        ),
    ] {
        let err = Config::load_with_env(Some(file(text).path()), |_| None).unwrap_err();
        assert_eq!(err.key, key, "{text}: {err}");
    }
}

#[test]
fn stale_config_is_on_with_a_90_second_kubelet_sync_by_default() {
    let c = Config::default();
    assert!(c.stale_config.enabled);
    assert_eq!(c.stale_config.kubelet_sync(), Duration::from_secs(90));
    let f = file("[stale_config]\nkubelet_sync_seconds = 2.5\n");
    let c = Config::load_with_env(Some(f.path()), |k| {
        (k == "DRIFTD_STALE_CONFIG_ENABLED").then(|| "false".to_string())
    })
    .unwrap();
    assert!(!c.stale_config.enabled);
    assert_eq!(c.stale_config.kubelet_sync(), Duration::from_millis(2500));
    let f = file("[stale_config]\nkubelet_sync_seconds = -1\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert_eq!(err.key, "stale_config.kubelet_sync_seconds");
}

#[test]
fn a_shard_owns_its_patterns_and_elects_on_its_own_lease() {
    let unsharded = Config::default();
    assert!(unsharded.shard.scope().is_all());
    assert_eq!(unsharded.leader_election.lease_name, "driftd");

    let f = file("[shard]\nname = \"a\"\nsources = [\"team-a/*\", \"helm:team-a/*\"]\n");
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    let scope = c.shard.scope();
    assert!(scope.contains("team-a/web") && scope.contains("helm:team-a/api"));
    assert!(!scope.contains("team-b/web") && !scope.contains("shop"));
    assert_eq!(c.leader_election.lease_name, "driftd-a");

    // An explicit Lease name stands; the environment can name the shard.
    let f = file("[leader_election]\nlease_name = \"shard-lease\"\n");
    let c = Config::load_with_env(Some(f.path()), |k| match k {
        "DRIFTD_SHARD_NAME" => Some("b".into()),
        "DRIFTD_SHARD_SOURCES" => Some("[\"team-b/*\"]".into()),
        _ => None,
    })
    .unwrap();
    assert_eq!(c.leader_election.lease_name, "shard-lease");
    assert!(c.shard.scope().contains("team-b/x") && !c.shard.scope().contains("team-a/x"));
}

#[test]
fn bad_shard_settings_name_their_key() {
    for (text, key, says) in [
        (
            "[shard]\nname = \"Team_A\"\n",
            "shard.name",
            "not a shard name",
        ),
        (
            "[shard]\nsources = [\"a/*\"]\n",
            "shard.name",
            "must be set",
        ),
        (
            "[shard]\nname = \"a\"\nsources = [\"a/*\", \"\"]\n",
            "shard.sources[1]",
            "matches no source",
        ),
    ] {
        let err = Config::load_with_env(Some(file(text).path()), |_| None).unwrap_err();
        assert_eq!(err.key, key, "{text}: {err}");
        assert!(err.reason.contains(says), "{text}: {err}");
    }
}

#[test]
fn pulumi_state_dirs_are_read_and_their_locks_checked() {
    let f = file(
        "[pulumi]\nstate_dirs = [\"/srv/pulumi\", \"/srv/ops\"]\nlock_dirs = [\"/srv/ops\", \"/srv/old\"]\n",
    );
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert_eq!(
        c.pulumi.state_dirs,
        [PathBuf::from("/srv/pulumi"), PathBuf::from("/srv/ops")]
    );
    assert_eq!(
        c.pulumi.lock_roots(),
        ["/srv/pulumi", "/srv/ops", "/srv/old"].map(PathBuf::from),
        "each root once"
    );
    assert!(
        Config::default().pulumi.state_dirs.is_empty(),
        "none by default"
    );
}

#[test]
fn audit_is_off_by_default_and_its_limits_are_checked() {
    let c = Config::default();
    assert!(!c.audit.enabled());
    let f = file("[audit]\nlog_path = \"/var/log/audit.log\"\nmax_events = 10\n");
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert!(c.audit.enabled());
    assert!(!c.audit.webhook());
    assert_eq!(c.audit.max_events, 10);
    for (text, key) in [
        ("max_body_bytes = 10", "audit.max_body_bytes"),
        (
            "max_requests_per_second = 0.0",
            "audit.max_requests_per_second",
        ),
        ("burst = 0", "audit.burst"),
        ("retention_seconds = 0.0", "audit.retention_seconds"),
        ("max_events = 0", "audit.max_events"),
    ] {
        let f = file(&format!("[audit]\n{text}\n"));
        let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
        assert_eq!(err.key, key, "{text}");
    }
}

#[test]
fn the_webhook_token_is_read_from_its_file_and_an_empty_one_is_refused() {
    let token = file("  s3cret-token\n");
    let f = file(&format!(
        "[audit]\nwebhook_token_file = \"{}\"\n",
        token.path().display()
    ));
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert!(c.audit.webhook());
    assert_eq!(
        c.audit.webhook_token().unwrap().as_deref(),
        Some("s3cret-token")
    );
    let empty = file("\n");
    let c = AuditConfig {
        webhook_token_file: Some(empty.path().to_path_buf()),
        ..AuditConfig::default()
    };
    let err = c.webhook_token().unwrap_err();
    assert!(err.contains("holds no token"), "{err}");
}

#[test]
fn history_retention_defaults_to_90_days_and_0_keeps_forever() {
    let c = Config::default();
    assert_eq!(
        c.history.retention(),
        Some(Duration::from_secs(90 * 86_400))
    );
    let f = file("[history]\nretention_days = 0\n");
    let c = Config::load_with_env(Some(f.path()), |_| None).unwrap();
    assert_eq!(c.history.retention(), None);
    let c = Config::load_with_env(None, |k| {
        (k == "DRIFTD_HISTORY_RETENTION_DAYS").then(|| "7".to_string())
    })
    .unwrap();
    assert_eq!(c.history.retention_days, 7);
    let f = file("[history]\nretention_days = 40000\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert!(
        err.to_string()
            .contains("key `history.retention_days`: must be at most 36500"),
        "{err}"
    );
    let f = file("[history]\nretention = 7\n");
    let err = Config::load_with_env(Some(f.path()), |_| None).unwrap_err();
    assert!(err.to_string().contains("retention"), "{err}");
}
