//! A package source as Pi 1.5.2 reads it (`parseSource`, `parseGitUrl`): `npm:name[@version]`,
//! a git source (`git:` with any shorthand, or an `https://`, `http://`, `ssh://`, `git://`
//! URL, a `@ref` after the path), else a local path.

use std::path::Path;

/// What a source names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Npm {
        name: String,
        version: Option<String>,
    },
    /// A git repository, by host and path (`.git` taken off), the ref aside.
    Git { host: String, path: String },
    /// A file or folder, as written.
    Local(String),
}

impl Source {
    /// Pi's `parseSource`.
    pub fn parse(source: &str) -> Source {
        if let Some(spec) = source.strip_prefix("npm:") {
            let (name, version) = npm_spec(spec.trim());
            return Source::Npm { name, version };
        }
        let trimmed = source.trim();
        let remote = [
            "npm:", "git:", "github:", "http:", "https:", "ssh:", "builtin:",
        ]
        .iter()
        .any(|p| trimmed.starts_with(p));
        if remote {
            if let Some((host, path)) = git(trimmed) {
                return Source::Git { host, path };
            }
        }
        Source::Local(source.to_owned())
    }
}

/// Pi's `parseNpmSpec`: a name (scoped or not) and what follows its `@`.
fn npm_spec(spec: &str) -> (String, Option<String>) {
    let from = usize::from(spec.starts_with('@'));
    match spec[from..].find('@').map(|at| at + from) {
        Some(at) if at + 1 < spec.len() && at > from => {
            (spec[..at].to_owned(), Some(spec[at + 1..].to_owned()))
        }
        _ => (spec.to_owned(), None),
    }
}

/// The `@ref` after a git source's path (Pi's `splitRef`), if it has one.
pub fn git_ref(source: &str) -> Option<&str> {
    let url = source.strip_prefix("git:").map_or(source, str::trim);
    let repo = without_ref(url);
    (repo.len() < url.len()).then(|| &url[repo.len() + 1..])
}

/// Pi's `splitRef`: the repository without the `@ref` after its path.
fn without_ref(url: &str) -> &str {
    let path_start = if let Some(rest) = url.strip_prefix("git@") {
        rest.find(':').map(|at| at + 5)
    } else if let Some(at) = url.find("://") {
        url[at + 3..].find('/').map(|slash| at + 3 + slash + 1)
    } else {
        url.find('/').map(|slash| slash + 1)
    };
    let Some(start) = path_start else {
        return url;
    };
    match url[start..].find('@') {
        Some(at) if at > 0 && start + at + 1 < url.len() => &url[..start + at],
        _ => url,
    }
}

/// Hosts whose paths are `user/project` (hosted-git-info's).
const HOSTED: [(&str, &str); 3] = [
    ("github", "github.com"),
    ("gitlab", "gitlab.com"),
    ("bitbucket", "bitbucket.org"),
];

/// Pi's `parseGitUrl`: the host and path of a git source, `None` when it names none.
fn git(source: &str) -> Option<(String, String)> {
    let (prefixed, url) = match source.strip_prefix("git:") {
        Some(rest) => (true, rest.trim()),
        None => (false, source),
    };
    let lower = url.to_ascii_lowercase();
    let protocol = ["https://", "http://", "ssh://", "git://"]
        .iter()
        .any(|p| lower.starts_with(p));
    if !prefixed && !protocol {
        return None;
    }
    let repo = without_ref(url);
    let (host, path) = if let Some(rest) = repo.strip_prefix("git@") {
        rest.split_once(':')?
    } else if let Some(at) = repo.find("://") {
        let rest = &repo[at + 3..];
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let host = authority.rsplit('@').next().unwrap_or(authority);
        (host.split(':').next().unwrap_or(host), path)
    } else if let Some((short, path)) = repo
        .split_once(':')
        .filter(|(s, _)| HOSTED.iter().any(|(name, _)| name == s))
    {
        let host = HOSTED
            .iter()
            .find(|(name, _)| *name == short)
            .map(|h| h.1)?;
        (host, path)
    } else {
        let (first, rest) = repo.split_once('/')?;
        if first.contains('.') || first == "localhost" {
            (first, rest)
        } else {
            // `user/project`: hosted-git-info's GitHub shorthand.
            ("github.com", repo)
        }
    };
    let host = host.to_ascii_lowercase();
    let path = path.trim_start_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    let path = if HOSTED.iter().any(|(_, h)| *h == host) && host != "gitlab.com" {
        path.splitn(3, '/').take(2).collect::<Vec<_>>().join("/")
    } else {
        path.to_owned()
    };
    let unsafe_part = |part: &str| {
        part.contains(['\0', '\\']) || part.starts_with('/') || part.split('/').any(|p| p == "..")
    };
    if host.is_empty()
        || host.contains('/')
        || unsafe_part(&host)
        || unsafe_part(&path)
        || path.split('/').filter(|p| !p.is_empty()).count() < 2
    {
        return None;
    }
    Some((host, path))
}

/// Whether an npm package is installed at `root` as Pi checks it
/// (`installedNpmMatchesConfiguredVersion`): its `package.json` has a version, and it satisfies
/// the version asked for when that is a version or a range, npm's way (`^1.2`, `~1`, `1.x`,
/// `>=1 <2 || 3`; a pre-release only where the range names one of its own `major.minor.patch`).
/// A tag (`latest`, `next`) is not a range: any installed version will do.
pub fn npm_installed(root: &Path, version: Option<&str>) -> bool {
    let installed = std::fs::read_to_string(root.join("package.json"))
        .ok()
        .and_then(|t| {
            serde_json::from_str::<serde_json::Value>(t.trim_start_matches('\u{feff}')).ok()
        })
        .and_then(|v| v.get("version").and_then(|v| v.as_str()).map(str::to_owned));
    let Some(installed) = installed else {
        return false;
    };
    match version.map(nodejs_semver::Range::parse) {
        Some(Ok(range)) => nodejs_semver::Version::parse(&installed)
            .is_ok_and(|installed| range.satisfies(&installed)),
        None | Some(Err(_)) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_source(host: &str, path: &str) -> Source {
        Source::Git {
            host: host.into(),
            path: path.into(),
        }
    }

    #[test]
    fn sources_are_read_as_pi_reads_them() {
        assert_eq!(
            Source::parse("npm:@scope/pkg@1.2.3"),
            Source::Npm {
                name: "@scope/pkg".into(),
                version: Some("1.2.3".into())
            }
        );
        assert_eq!(
            Source::parse("npm:pkg"),
            Source::Npm {
                name: "pkg".into(),
                version: None
            }
        );
        for source in [
            "git:github.com/user/repo",
            "git:github.com/user/repo@v1",
            "git:user/repo",
            "git:git@github.com:user/repo.git",
            "https://github.com/user/repo",
            "https://github.com/user/repo.git@main",
            "git:github:user/repo",
        ] {
            assert_eq!(
                Source::parse(source),
                git_source("github.com", "user/repo"),
                "{source}"
            );
        }
        assert_eq!(
            Source::parse("ssh://git@example.com:22/team/tools/repo.git"),
            git_source("example.com", "team/tools/repo")
        );
        for local in [
            "./pkg",
            "~/pkgs/a",
            "/abs/pkg",
            "github:user/repo",
            "https://x.com/one",
            "git:../../etc",
        ] {
            assert_eq!(Source::parse(local), Source::Local(local.into()), "{local}");
        }
    }
}
