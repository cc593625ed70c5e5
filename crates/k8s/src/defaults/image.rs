//! A container's default `imagePullPolicy`, from its image reference as kube-apiserver
//! parses it (`pkg/util/parsers.ParseImageName`, over the distribution `reference`
//! grammar): `Always` for the tag `latest`, which a reference without tag and digest has;
//! `IfNotPresent` for any other tag, a digest, or a reference that does not parse (an empty
//! image, upper case in the repository, a malformed digest), since the parser then reports
//! no tag at all.

/// SetDefaults_Container's pull policy for `image`.
pub(super) fn pull_policy(image: &str) -> &'static str {
    match tag(image) {
        Some("latest") => "Always",
        _ => "IfNotPresent",
    }
}

/// The tag `ParseImageName` reports: the given one, `latest` when there is neither tag nor
/// digest, `None` when there is only a digest or the reference is invalid.
fn tag(image: &str) -> Option<&str> {
    let (name_and_tag, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    if digest.is_some_and(|d| !valid_digest(d)) {
        return None;
    }
    // A ':' after the last '/' starts the tag (one before it is a registry port).
    let last_slash = name_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_and_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_and_tag[..last_slash + i],
            Some(&name_and_tag[last_slash + i + 1..]),
        ),
        None => (name_and_tag, None),
    };
    if !valid_name(name) || tag.is_some_and(|t| !valid_tag(t)) {
        return None;
    }
    match (tag, digest) {
        (Some(t), _) => Some(t),
        (None, None) => Some("latest"),
        (None, Some(_)) => None,
    }
}

/// `[domain/]path`: the first component is a domain when it has a '.' or ':', is
/// `localhost`, or has upper case (ParseNormalizedNamed's split); the path components are
/// lower-case alphanumerics joined by `.`, `_`, `__` or runs of `-`. At most 255 characters,
/// and not a bare 64-hex image id.
fn valid_name(name: &str) -> bool {
    if name.is_empty() || name.len() > 255 {
        return false;
    }
    let (domain, path) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (Some(first), rest)
        }
        _ => (None, name),
    };
    if domain.is_some_and(|d| !valid_domain(d)) {
        return false;
    }
    let is_id = path.len() == 64 && path.bytes().all(|b| b.is_ascii_hexdigit());
    !is_id && path.split('/').all(valid_path_component)
}

/// `host[:port]`, the host a domain name or a bracketed IPv6 address.
fn valid_domain(domain: &str) -> bool {
    let (host_ok, port) = match domain.strip_prefix('[') {
        Some(rest) => {
            let Some((v6, after)) = rest.split_once(']') else {
                return false;
            };
            let v6_ok = !v6.is_empty() && v6.bytes().all(|b| b.is_ascii_hexdigit() || b == b':');
            match after {
                "" => (v6_ok, None),
                _ => (v6_ok, Some(after.strip_prefix(':').unwrap_or(""))),
            }
        }
        None => {
            let (host, port) = match domain.split_once(':') {
                Some((h, p)) => (h, Some(p)),
                None => (domain, None),
            };
            let host_ok = !host.is_empty()
                && host.split('.').all(|c| {
                    let b = c.as_bytes();
                    !b.is_empty()
                        && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
                        && b[0] != b'-'
                        && b[b.len() - 1] != b'-'
                });
            (host_ok, port)
        }
    };
    host_ok && port.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
}

fn valid_path_component(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: &u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(&b[0]) || !alnum(&b[b.len() - 1]) {
        return false;
    }
    // Separators between alphanumeric runs: '.', '_', "__" or any run of '-'.
    let mut i = 0;
    while i < b.len() {
        if alnum(&b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(&b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = matches!(sep, "." | "_" | "__") || sep.bytes().all(|x| x == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `[\w][\w.-]{0,127}`
fn valid_tag(tag: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let b = tag.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && word(b[0])
        && b.iter().all(|&x| word(x) || x == b'.' || x == b'-')
}

/// `algorithm:hex` with an algorithm the digest package knows and its exact hex length.
fn valid_digest(digest: &str) -> bool {
    let Some((algorithm, hex)) = digest.split_once(':') else {
        return false;
    };
    let len = match algorithm {
        "sha256" => 64,
        "sha384" => 96,
        "sha512" => 128,
        _ => return false,
    };
    hex.len() == len
        && hex
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::pull_policy;

    const SHA: &str = "sha256:b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7";

    #[test]
    fn pull_policy_follows_the_tag_of_a_valid_reference() {
        for (image, want) in [
            ("nginx", "Always"),
            ("nginx:latest", "Always"),
            ("nginx:1.27", "IfNotPresent"),
            ("registry:5000/team/app", "Always"),
            ("registry:5000/team/app:v2", "IfNotPresent"),
            ("localhost/app", "Always"),
            ("[::1]:5000/app:latest", "Always"),
            ("ghcr.io/org/some_app-x__y:1.0.0-rc.1", "IfNotPresent"),
            (&format!("nginx@{SHA}"), "IfNotPresent"),
            (&format!("nginx:latest@{SHA}"), "Always"),
            (&format!("nginx:1.27@{SHA}"), "IfNotPresent"),
        ] {
            assert_eq!(pull_policy(image), want, "{image}");
        }
    }

    #[test]
    fn a_reference_that_does_not_parse_has_no_tag() {
        for image in [
            "",
            "NGINX",
            "nginx:latest@sha256:abcd",
            "nginx@md5:0123456789abcdef0123456789abcdef",
            "nginx:-bad",
            "team//app",
            "app-",
            "b5b2b2c507a0944348e0303114d8d93aaaa081732b86451d9bce1f432a537bc7",
        ] {
            assert_eq!(pull_policy(image), "IfNotPresent", "{image:?}");
        }
        // Upper case is fine in a registry host.
        assert_eq!(pull_policy("Registry.Example.com/app"), "Always");
    }
}
