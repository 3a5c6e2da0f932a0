//! What a sandboxed grader may reach: the `allow:` block (at the suite's top level and per
//! grader, read by config/allow.rs) resolved into the [`Grants`] of one grader.
//!
//! Nothing is granted by default. A grader's `allow:` key replaces the suite's value of that
//! key; the keys it does not name are the suite's.

use std::fmt;
use std::fs::File;
use std::net::IpAddr;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::config::allow::{AllowSpec, FileGrant, Host, HostPattern, VarName};

impl AllowSpec {
    /// The grader's block over the suite's: each key the grader names replaces the suite's.
    pub fn over(grader: Option<&AllowSpec>, suite: Option<&AllowSpec>) -> AllowSpec {
        let empty = AllowSpec::default();
        let (grader, suite) = (grader.unwrap_or(&empty), suite.unwrap_or(&empty));
        AllowSpec {
            network: grader.network.clone().or_else(|| suite.network.clone()),
            env: grader.env.clone().or_else(|| suite.env.clone()),
            secrets: grader.secrets.clone().or_else(|| suite.secrets.clone()),
            files: grader.files.clone().or_else(|| suite.files.clone()),
        }
    }

    /// Whether this block writes the key a [`GrantError`]'s `field` is below (`files[0]` is
    /// below `files`): where the mistake is to be located.
    pub fn writes(&self, field: &str) -> bool {
        match field.split(['.', '[']).next() {
            Some("network") => self.network.is_some(),
            Some("env") => self.env.is_some(),
            Some("secrets") => self.secrets.is_some(),
            Some("files") => self.files.is_some(),
            _ => false,
        }
    }

    /// Resolves the block for one grader: folders against `base_dir` (each must be a folder),
    /// variables from gavel's environment. A mistake is `(field below allow, message, hint)`.
    pub fn resolve(&self, base_dir: &Path) -> Result<Grants, Vec<GrantError>> {
        let mut errors = Vec::new();
        let mut files = Vec::new();
        for (index, grant) in self.files.iter().flatten().enumerate() {
            let (field, written) = match grant {
                FileGrant::Folder(folder) => (format!("files[{index}]"), folder),
                FileGrant::Row { under, .. } => (format!("files[{index}].under"), under),
            };
            let opened = folder(base_dir, written).and_then(|path| match grant {
                FileGrant::Folder(_) => Ok(Mount::Folder(Folder::open_checked(path)?)),
                FileGrant::Row { row, .. } => Ok(Mount::Row {
                    under: path,
                    field: row.clone(),
                }),
            });
            match opened {
                Ok(mount) => files.push(mount),
                Err(e) => errors.push(GrantError {
                    field,
                    message: e.to_string(),
                    hint: "write an existing folder, relative to the suite's folder or absolute",
                }),
            }
        }
        // A variable both shown and kept secret would be shown: its value reaches the sandbox
        // beside the placeholder.
        for name in (self.secrets.iter().flatten()).map(|(name, _)| name) {
            if self.env.iter().flatten().any(|shown| shown == name) {
                errors.push(GrantError {
                    field: format!("secrets.{}", name.0),
                    message: format!(
                        "`{}` is granted both as a secret and under `env:`, which would give \
                         the grader its value",
                        name.0
                    ),
                    hint: "grant a variable under one key: `secrets:` to send its value to \
                           its hosts only, `env:` to let the grader read it",
                });
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let env = (self.env.iter().flatten())
            .filter_map(|name| Some((name.0.clone(), std::env::var(&name.0).ok()?)))
            .collect();
        let secrets = (self.secrets.iter().flatten())
            .filter_map(|(name, hosts)| {
                Some(Secret {
                    placeholder: placeholder(&name.0),
                    value: std::env::var(&name.0).ok()?,
                    name: name.0.clone(),
                    hosts: hosts.clone(),
                })
            })
            .collect();
        Ok(Grants {
            network: self.network.clone().unwrap_or_default(),
            env,
            secrets,
            files,
        })
    }
}

/// A mistake in an `allow:` block found when resolving it.
#[derive(Debug, Clone, PartialEq)]
pub struct GrantError {
    /// The field below `allow`, e.g. `files[0]`.
    pub field: String,
    pub message: String,
    pub hint: &'static str,
}

/// Why a granted folder cannot be mounted.
#[derive(Debug, thiserror::Error)]
enum FolderError {
    #[error("cannot use folder `{}`: {error}", path.display())]
    Unusable {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("`{}` is not a folder", .0.display())]
    NotAFolder(PathBuf),
    #[error("`{}` was replaced while it was checked", .0.display())]
    Changed(PathBuf),
    #[error(
        "`{}` would hide, or be hidden by, the grader's own scratch folder, mounted at \
         `{SCRATCH}`: grant a folder inside `{SCRATCH}` instead",
        .0.display()
    )]
    HidesScratch(PathBuf),
}

/// Where each grader granted folders has its own writable scratch folder.
pub const SCRATCH: &str = "/tmp";

/// `written` (relative to `base_dir`, or absolute) as an absolute folder with its symlinks
/// resolved, or why it is not one.
fn folder(base_dir: &Path, written: &str) -> Result<PathBuf, FolderError> {
    let path = base_dir.join(written);
    let resolved = match path.canonicalize() {
        Ok(resolved) => resolved,
        Err(error) => return Err(FolderError::Unusable { path, error }),
    };
    if Path::new(SCRATCH).starts_with(&resolved) {
        Err(FolderError::HidesScratch(resolved))
    } else if resolved.is_dir() {
        Ok(resolved)
    } else {
        Err(FolderError::NotAFolder(path))
    }
}

impl HostPattern {
    /// Whether some host and port `other` names is one this pattern grants too.
    pub fn overlaps(&self, other: &HostPattern) -> bool {
        let web = |port: Option<u16>| port.is_none_or(|port| port == 80 || port == 443);
        let ports = match (self.port, other.port) {
            (Some(mine), Some(theirs)) => mine == theirs,
            (mine, theirs) => web(mine) && web(theirs),
        };
        let under = |name: &str, suffix: &str| {
            (name.strip_suffix(suffix)).is_some_and(|head| head.ends_with('.'))
        };
        let hosts = match (&self.host, &other.host) {
            (Host::Suffix(a), Host::Suffix(b)) => a == b || under(a, b) || under(b, a),
            (Host::Suffix(suffix), Host::Name(name)) | (Host::Name(name), Host::Suffix(suffix)) => {
                under(name, suffix)
            }
            (mine, theirs) => mine == theirs,
        };
        ports && hosts
    }

    /// Whether a connection to `host` (a name or an address, IPv6 without brackets) on `port`
    /// is granted.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            Some(granted) => granted == port,
            None => port == 80 || port == 443,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        port_ok
            && match &self.host {
                Host::Name(name) => *name == host,
                Host::Suffix(suffix) => host
                    .strip_suffix(suffix.as_str())
                    .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
                Host::Ip(ip) => host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .parse::<IpAddr>()
                    .is_ok_and(|h| h == *ip),
            }
    }
}

/// What one grader may reach, resolved from its `allow:` over the suite's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Grants {
    pub network: Vec<HostPattern>,
    /// Variables passed in, with their values; those unset in gavel's environment are absent.
    pub env: Vec<(String, String)>,
    /// Secrets set in gavel's environment; those unset are absent.
    pub secrets: Vec<Secret>,
    pub files: Vec<Mount>,
}

impl Grants {
    /// Whether nothing is granted.
    pub fn is_empty(&self) -> bool {
        self.network.is_empty()
            && self.env.is_empty()
            && self.secrets.is_empty()
            && self.files.is_empty()
    }
}

impl Grants {
    /// Grants that can never take effect, a sentence each: this machine granted by name (a
    /// name may reach public addresses only), and a secret's host that `network:` does not
    /// grant (its value is never sent there).
    pub fn idle(&self) -> Vec<String> {
        let mut idle = Vec::new();
        for pattern in &self.network {
            if let Host::Name(name) | Host::Suffix(name) = &pattern.host
                && (name == "localhost" || name.ends_with(".localhost"))
            {
                idle.push(format!(
                    "`network:` grants `{pattern}` by name, and a name reaches public addresses \
                     only: grant this machine by its address (`127.0.0.1:PORT`)"
                ));
            }
        }
        for secret in &self.secrets {
            for host in &secret.hosts {
                if !self.network.iter().any(|granted| granted.overlaps(host)) {
                    idle.push(format!(
                        "the secret `{}` is never sent to `{host}`: `network:` does not grant it",
                        secret.name
                    ));
                }
            }
        }
        idle
    }

    /// What a call may reach before any row: the variables (each secret as its placeholder)
    /// and the folders, without those a row chooses (a program loaded before any sample).
    pub fn access(&self) -> Access {
        let secrets = (self.secrets.iter()).map(|s| (s.name.clone(), s.placeholder.clone()));
        let folders: Vec<Folder> = (self.files.iter())
            .filter_map(|mount| match mount {
                Mount::Folder(folder) => Some(folder.clone()),
                Mount::Row { .. } => None,
            })
            .collect();
        Access {
            env: self.env.iter().cloned().chain(secrets).collect(),
            cwd: folders.first().map(|folder| folder.path.clone()),
            folders,
            scratch: !self.files.is_empty(),
        }
    }

    /// Whether a call's folders depend on its row (a row-chosen `files:` grant).
    pub fn varies_by_row(&self) -> bool {
        (self.files.iter()).any(|mount| matches!(mount, Mount::Row { .. }))
    }

    /// What a call grading `row` (its JSON text) may reach: [`Grants::access`] with the folder
    /// the row names for each row-chosen grant; why not when a row names no folder inside it.
    pub fn access_for(&self, row: &str) -> Result<Access, RowFolderError> {
        let mut access = self.access();
        let mut row_chosen = None;
        for mount in &self.files {
            if let Mount::Row { under, field } = mount {
                let folder = row_folder(row, under, field)?;
                if row_chosen.is_none() {
                    row_chosen = Some(folder.path.clone());
                }
                access.folders.push(folder);
            }
        }
        // The row's folder is where the row's work is: its grader starts there.
        if row_chosen.is_some() {
            access.cwd = row_chosen;
        }
        Ok(access)
    }
}

/// What one sandboxed call may reach.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Access {
    /// The call's environment: granted variables with their values, secrets as placeholders.
    pub env: Vec<(String, String)>,
    /// Folders mounted read-only at their own absolute path.
    pub folders: Vec<Folder>,
    /// Whether the call gets an empty, writable `/tmp` of its own.
    pub scratch: bool,
    /// The folder the call starts in, against which relative paths resolve: the first folder
    /// a row chose, else the first folder granted; none (`/`) without folders.
    pub cwd: Option<PathBuf>,
}

/// What a grader may reach, as `gavel validate` prints it and `run.json` records it: names,
/// hosts and folders, never a secret's value.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Reach {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Each secret's name, with the hosts its value may be sent to.
    #[serde(default, skip_serializing_if = "IndexMap::is_empty")]
    pub secrets: IndexMap<String, Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

impl From<&Grants> for Reach {
    fn from(grants: &Grants) -> Reach {
        let hosts = |hosts: &[HostPattern]| hosts.iter().map(ToString::to_string).collect();
        Reach {
            network: hosts(&grants.network),
            env: grants.env.iter().map(|(name, _)| name.clone()).collect(),
            secrets: (grants.secrets.iter())
                .map(|s| (s.name.clone(), hosts(&s.hosts)))
                .collect(),
            files: (grants.files.iter())
                .map(|mount| match mount {
                    Mount::Folder(folder) => folder.path.display().to_string(),
                    Mount::Row { under, field } => {
                        format!(
                            "the folder of the row's `{field}`, inside {}",
                            under.display()
                        )
                    }
                })
                .collect(),
        }
    }
}

impl fmt::Display for Reach {
    /// One line: `network a.com; env A, B; secrets K (to a.com); files /x`, or `nothing`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if !self.network.is_empty() {
            parts.push(format!("network {}", self.network.join(", ")));
        }
        if !self.env.is_empty() {
            parts.push(format!("env {}", self.env.join(", ")));
        }
        if !self.secrets.is_empty() {
            let secrets: Vec<String> = (self.secrets.iter())
                .map(|(name, hosts)| match hosts.is_empty() {
                    true => format!("{name} (sent nowhere)"),
                    false => format!("{name} (sent to {})", hosts.join(", ")),
                })
                .collect();
            parts.push(format!("secrets {}", secrets.join(", ")));
        }
        if !self.files.is_empty() {
            parts.push(format!("files (read-only) {}", self.files.join(", ")));
        }
        if parts.is_empty() {
            f.write_str("nothing")
        } else {
            f.write_str(&parts.join("; "))
        }
    }
}

/// A secret: inside the sandbox the variable `name` reads as `placeholder`; the network code
/// substitutes `value` in headers of requests to `hosts` only.
#[derive(Clone, PartialEq)]
pub struct Secret {
    pub name: String,
    pub placeholder: String,
    pub value: String,
    pub hosts: Vec<HostPattern>,
}

impl fmt::Debug for Secret {
    /// Without the value, which no text of gavel's shows.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("placeholder", &self.placeholder)
            .field("hosts", &self.hosts)
            .finish_non_exhaustive()
    }
}

/// A folder mounted read-only at its own absolute path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mount {
    /// A folder, absolute, its symlinks resolved.
    Folder(Folder),
    /// The folder a row names at the dotted path `field`, mounted when it is inside `under`
    /// (absolute, its symlinks resolved).
    Row { under: PathBuf, field: String },
}

/// A folder a call may read, held open since it was checked: the sandbox mounts the folder that
/// was checked, whatever is put at its path after (a link to somewhere else, renamed in by an
/// agent still at work beside the grade).
#[derive(Debug, Clone)]
pub struct Folder {
    /// Where the grader sees it, and where it was when checked: absolute, links resolved.
    pub path: PathBuf,
    held: Arc<File>,
}

impl PartialEq for Folder {
    fn eq(&self, other: &Folder) -> bool {
        self.path == other.path
    }
}

impl Eq for Folder {}

impl Folder {
    /// The folder at `path` (absolute, its links resolved a moment ago), opened if it is still
    /// there; `Ok(None)` when something else stands at that path now.
    fn open(path: PathBuf) -> std::io::Result<Option<Folder>> {
        let held = crate::fsio::open_folder(&path)?;
        // The kernel's name for what was opened: another path when a folder on the way was
        // swapped since the links were resolved.
        if let Some(handle) = handle_path(&held)
            && std::fs::read_link(handle)? != path
        {
            return Ok(None);
        }
        Ok(Some(Folder {
            path,
            held: Arc::new(held),
        }))
    }

    /// [`Folder::open`], something else at the path said as an error.
    fn open_checked(path: PathBuf) -> Result<Folder, FolderError> {
        match Folder::open(path.clone()) {
            Ok(Some(folder)) => Ok(folder),
            Ok(None) => Err(FolderError::Changed(path)),
            Err(error) => Err(FolderError::Unusable { path, error }),
        }
    }

    /// Where the host opens the folder to mount it: through its handle, where the system
    /// names open files (`/proc/self/fd`), else by its path.
    pub fn source(&self) -> PathBuf {
        handle_path(&self.held).unwrap_or_else(|| self.path.clone())
    }
}

/// `/proc/self/fd/N` for `file`, where the system has it.
fn handle_path(file: &File) -> Option<PathBuf> {
    static PROC: OnceLock<bool> = OnceLock::new();
    PROC.get_or_init(|| Path::new("/proc/self/fd").is_dir())
        .then(|| PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd())))
}

/// The text a secret's variable reads as inside the sandbox:
/// `gavel-secret-<NAME>-<32 hex chars, random per run>`.
fn placeholder(name: &str) -> String {
    static RUN: OnceLock<String> = OnceLock::new();
    // fastrand's generator is seeded from the standard library's per-process random keys.
    let run = RUN.get_or_init(|| format!("{:032x}", fastrand::u128(..)));
    format!("gavel-secret-{name}-{run}")
}

/// Why a row-chosen `files:` grant gives the row no folder, in words naming the row's field.
#[derive(Debug, thiserror::Error)]
pub enum RowFolderError {
    #[error("allow.files: the row is not JSON to read `{field}` from: {error}")]
    NotJson {
        field: String,
        error: serde_json::Error,
    },
    #[error("allow.files: the row has no `{field}` naming a folder")]
    Missing { field: String },
    #[error("allow.files: the row's `{field}` is not text naming a folder")]
    NotText { field: String },
    #[error("allow.files: the row's `{field}` names `{named}`, which cannot be used: {error}")]
    Unusable {
        field: String,
        named: String,
        error: std::io::Error,
    },
    #[error(
        "allow.files: the row's `{field}` names `{named}`, which is not a folder below `{}`; a row cannot widen a grant",
        under.display()
    )]
    Outside {
        field: String,
        named: String,
        under: PathBuf,
    },
    #[error("allow.files: the row's `{field}` names `{named}`, which is not a folder")]
    NotAFolder { field: String, named: String },
}

/// The folder the row names at the dotted `field`, when it is below `under` (inside it, not
/// `under` itself) once its symlinks are resolved; else why not.
pub fn row_folder(row: &str, under: &Path, field: &str) -> Result<Folder, RowFolderError> {
    let field_name = || field.to_string();
    let value: Value = serde_json::from_str(row).map_err(|error| RowFolderError::NotJson {
        field: field_name(),
        error,
    })?;
    let named = field
        .split('.')
        .try_fold(&value, |node, key| node.get(key))
        .ok_or_else(|| RowFolderError::Missing {
            field: field_name(),
        })?;
    let Value::String(named) = named else {
        return Err(RowFolderError::NotText {
            field: field_name(),
        });
    };
    let resolved = Path::new(named)
        .canonicalize()
        .map_err(|error| RowFolderError::Unusable {
            field: field_name(),
            named: named.clone(),
            error,
        })?;
    // `under` itself would be every row's folder at once.
    if !resolved.starts_with(under) || resolved == under {
        return Err(RowFolderError::Outside {
            field: field_name(),
            named: named.clone(),
            under: under.to_path_buf(),
        });
    }
    if !resolved.is_dir() {
        return Err(RowFolderError::NotAFolder {
            field: field_name(),
            named: named.clone(),
        });
    }
    match Folder::open(resolved) {
        Ok(Some(folder)) => Ok(folder),
        // Swapped between the check and the open: what is there now was never checked.
        Ok(None) => Err(RowFolderError::Outside {
            field: field_name(),
            named: named.clone(),
            under: under.to_path_buf(),
        }),
        Err(error) => Err(RowFolderError::Unusable {
            field: field_name(),
            named: named.clone(),
            error,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> Result<HostPattern, crate::config::allow::NotAHostPattern> {
        HostPattern::try_from(text.to_string())
    }

    #[test]
    fn a_secrets_host_is_sent_to_only_where_a_network_pattern_overlaps_it() {
        let overlap = |network: &str, secret: &str| {
            pattern(network)
                .unwrap()
                .overlaps(&pattern(secret).unwrap())
        };
        for (network, secret) in [
            ("api.example.com", "api.example.com"),
            ("api.example.com:443", "api.example.com"),
            ("api.example.com", "api.example.com:443"),
            ("*.example.com", "api.example.com"),
            ("api.example.com", "*.example.com"),
            ("*.example.com", "*.eu.example.com"),
            ("127.0.0.1:8080", "127.0.0.1:8080"),
        ] {
            assert!(overlap(network, secret), "{network} {secret}");
        }
        for (network, secret) in [
            ("api.example.com", "api.example.org"),
            ("api.example.com:8443", "api.example.com"),
            ("*.example.com", "example.com"),
            ("*.example.com", "badexample.com"),
            ("127.0.0.1:8080", "127.0.0.1:8081"),
            ("127.0.0.1:8080", "localhost:8080"),
        ] {
            assert!(!overlap(network, secret), "{network} {secret}");
        }
    }

    #[test]
    fn a_folder_is_mounted_as_checked_whatever_its_path_becomes() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let checked = root.join("runs/one");
        std::fs::create_dir_all(&checked).unwrap();
        std::fs::write(checked.join("marker"), "checked").unwrap();
        let folder = Folder::open(checked.clone()).unwrap().expect("still there");
        // The folder's parent swapped for a link to another folder after the check.
        std::fs::rename(root.join("runs"), root.join("moved")).unwrap();
        std::fs::create_dir_all(root.join("elsewhere/one")).unwrap();
        std::fs::write(root.join("elsewhere/one/marker"), "planted").unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), root.join("runs")).unwrap();
        assert_eq!(folder.path, checked);
        let marker = std::fs::read_to_string(folder.source().join("marker")).unwrap();
        assert_eq!(marker, "checked");
        // Opened now, the path leads elsewhere than its links said when they were resolved.
        assert!(Folder::open(checked).unwrap().is_none());
    }

    #[test]
    fn host_patterns_match_their_hosts_and_ports_only() {
        let exact = pattern("API.example.com").unwrap();
        assert!(exact.matches("api.example.com", 443));
        assert!(exact.matches("api.example.com", 80));
        assert!(!exact.matches("api.example.com", 8080));
        assert!(!exact.matches("evil.api.example.com", 443));
        let wild = pattern("*.example.com").unwrap();
        assert!(wild.matches("a.b.example.com", 443));
        assert!(!wild.matches("example.com", 443));
        assert!(!wild.matches("badexample.com", 443));
        let ip = pattern("127.0.0.1:8080").unwrap();
        assert!(ip.matches("127.0.0.1", 8080));
        assert!(!ip.matches("127.0.0.1", 443));
        let v6 = pattern("[::1]:9").unwrap();
        assert!(v6.matches("::1", 9));
        assert_eq!(v6.to_string(), "[::1]:9");
        assert_eq!(wild.to_string(), "*.example.com");
        for bad in [
            "", "*", "*.", "a*.b", "::1", "[::1", "a..b", "-a.b", "a:0", "a:70000", "a b",
        ] {
            assert!(pattern(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn variable_names_are_checked() {
        assert!(VarName::try_from("OPENAI_BASE_URL".to_string()).is_ok());
        assert!(VarName::try_from("_x1".to_string()).is_ok());
        for bad in ["", "1X", "A-B", "A=B", "A B"] {
            assert!(VarName::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_grader_key_replaces_the_suites_and_the_rest_is_inherited() {
        let suite = AllowSpec {
            network: Some(vec![pattern("a.com").unwrap()]),
            env: Some(vec![VarName("HOME".to_string())]),
            ..AllowSpec::default()
        };
        let grader = AllowSpec {
            network: Some(Vec::new()),
            ..AllowSpec::default()
        };
        let merged = AllowSpec::over(Some(&grader), Some(&suite));
        assert_eq!(merged.network, Some(Vec::new()));
        assert_eq!(merged.env, suite.env);
    }

    #[test]
    fn a_secrets_debug_text_has_no_value() {
        let secret = Secret {
            name: "K".to_string(),
            placeholder: placeholder("K"),
            value: "hunter2".to_string(),
            hosts: Vec::new(),
        };
        assert!(!format!("{secret:?}").contains("hunter2"));
        assert!(secret.placeholder.starts_with("gavel-secret-K-"));
        assert_eq!(secret.placeholder.len(), "gavel-secret-K-".len() + 32);
    }
}
