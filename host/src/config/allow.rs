//! An `allow:` block as written (suite and grader), each host pattern, variable name and
//! folder checked as it is read; grade/grants.rs resolves it into a grader's grants.

use std::fmt;
use std::net::IpAddr;

use indexmap::IndexMap;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};

/// An `allow:` block as written.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowSpec {
    /// Hosts the grader may connect to over `wasi:http`.
    #[serde(default)]
    pub network: Option<Vec<HostPattern>>,
    /// Variables of gavel's environment passed in by name.
    #[serde(default)]
    pub env: Option<Vec<VarName>>,
    /// Variables the grader sees as a placeholder, each with the hosts its value may be sent
    /// to in headers.
    #[serde(default)]
    pub secrets: Option<IndexMap<VarName, Vec<HostPattern>>>,
    /// Folders mounted read-only at their own absolute path.
    #[serde(default)]
    pub files: Option<Vec<FileGrant>>,
}

impl AllowSpec {
    /// Whether a call's folders may depend on its row (a `{under, row}` entry of `files:`).
    pub fn chooses_by_row(&self) -> bool {
        (self.files.iter().flatten()).any(|grant| matches!(grant, FileGrant::Row { .. }))
    }
}

/// One entry of `files:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileGrant {
    /// A folder, relative to the suite's folder or absolute.
    Folder(String),
    /// The folder a row names at the dotted path `row`, when it is inside `under`.
    Row { under: String, row: String },
}

impl<'de> Deserialize<'de> for FileGrant {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Entry;
        const KEYS: &[&str] = &["under", "row"];
        impl<'de> Visitor<'de> for Entry {
            type Value = FileGrant;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a folder, or a mapping `{under: FOLDER, row: FIELD}`")
            }
            fn visit_str<E: de::Error>(self, folder: &str) -> Result<FileGrant, E> {
                if folder.is_empty() {
                    return Err(E::custom(
                        "the folder is empty; write `.` for the suite's own",
                    ));
                }
                Ok(FileGrant::Folder(folder.to_string()))
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<FileGrant, M::Error> {
                let (mut under, mut row) = (None::<String>, None::<String>);
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "under" => under = Some(map.next_value()?),
                        "row" => row = Some(map.next_value()?),
                        _ => return Err(de::Error::unknown_field(&key, KEYS)),
                    }
                }
                let under = under.ok_or_else(|| de::Error::missing_field("under"))?;
                let row = row.ok_or_else(|| de::Error::missing_field("row"))?;
                if row.is_empty() || row.split('.').any(str::is_empty) {
                    return Err(de::Error::custom(format!(
                        "`row: {row}` is not a dotted path of the row's keys, e.g. `extra_vars.workspace`"
                    )));
                }
                Ok(FileGrant::Row { under, row })
            }
        }
        deserializer.deserialize_any(Entry)
    }
}

/// The name of an environment variable: a letter or `_`, then letters, digits and `_`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct VarName(pub String);

/// A written variable name that is none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{0}` is not a variable name: write letters, digits and `_`, not starting with a digit (e.g. `OPENAI_BASE_URL`)"
)]
pub struct NotAVarName(pub String);

impl TryFrom<String> for VarName {
    type Error = NotAVarName;
    fn try_from(name: String) -> Result<VarName, NotAVarName> {
        let mut chars = name.chars();
        let valid = chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        if valid {
            Ok(VarName(name))
        } else {
            Err(NotAVarName(name))
        }
    }
}

/// A host a grader may connect to: `name`, `*.suffix` (one or more labels before the suffix)
/// or an IP address (v6 in brackets), each with an optional `:port`; without one, 80 and 443.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Deserialize)]
#[serde(try_from = "String")]
pub struct HostPattern {
    pub host: Host,
    pub port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A name, in lowercase.
    Name(String),
    /// `*.suffix`: any name ending in `.suffix`; holds the suffix, in lowercase.
    Suffix(String),
    Ip(IpAddr),
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Name(name) => f.write_str(name)?,
            Host::Suffix(suffix) => write!(f, "*.{suffix}")?,
            Host::Ip(IpAddr::V4(ip)) => write!(f, "{ip}")?,
            Host::Ip(IpAddr::V6(ip)) => write!(f, "[{ip}]")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

impl Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// A written host pattern that is none, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`{written}` is not a host pattern: {why}; write `api.example.com`, `*.example.com`, `127.0.0.1:8080` or `[::1]:8080`"
)]
pub struct NotAHostPattern {
    pub written: String,
    pub why: HostProblem,
}

/// What is wrong with a written host pattern.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostProblem {
    #[error("the `[` of an IPv6 address is not closed")]
    UnclosedBracket,
    #[error("only `:PORT` may follow `]`")]
    AfterBracket,
    #[error("not an IPv6 address between the brackets")]
    NotIpv6,
    #[error("an IPv6 address goes in brackets")]
    Ipv6WithoutBrackets,
    #[error("the port is not a number from 1 to 65535")]
    Port,
    #[error("the name is empty or longer than 253 characters")]
    NameLength,
    #[error("`*` is allowed only as a whole first label, `*.example.com`")]
    Wildcard,
    #[error("`{0}` is not a label of a host name (letters, digits and `-`)")]
    Label(String),
    #[error("a host pattern is a host and its port, not a URL (no scheme, no path)")]
    Url,
}

impl TryFrom<String> for HostPattern {
    type Error = NotAHostPattern;
    fn try_from(written: String) -> Result<HostPattern, NotAHostPattern> {
        let bad = |why: HostProblem| NotAHostPattern {
            written: written.clone(),
            why,
        };
        if written.contains("://") || written.contains('/') {
            return Err(bad(HostProblem::Url));
        }
        let (host, port) = if let Some(rest) = written.strip_prefix('[') {
            let (ip, after) = rest
                .split_once(']')
                .ok_or_else(|| bad(HostProblem::UnclosedBracket))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| bad(HostProblem::AfterBracket))?,
                ),
            };
            let ip = ip
                .parse::<std::net::Ipv6Addr>()
                .map_err(|_| bad(HostProblem::NotIpv6))?;
            (Host::Ip(IpAddr::V6(ip)), port)
        } else {
            if written.matches(':').count() > 1 {
                return Err(bad(HostProblem::Ipv6WithoutBrackets));
            }
            let (host, port) = match written.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (written.as_str(), None),
            };
            let host = host.to_ascii_lowercase();
            let host = if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
                Host::Ip(IpAddr::V4(ip))
            } else if let Some(suffix) = host.strip_prefix("*.") {
                check_name(suffix).map_err(bad)?;
                Host::Suffix(suffix.to_string())
            } else {
                check_name(&host).map_err(bad)?;
                Host::Name(host)
            };
            (host, port)
        };
        let port = match port {
            None => None,
            Some(port) => match port.parse::<u16>() {
                Ok(port) if port > 0 => Some(port),
                _ => return Err(bad(HostProblem::Port)),
            },
        };
        Ok(HostPattern { host, port })
    }
}

/// Why `name` is not a DNS name of letters, digits and `-` labels.
fn check_name(name: &str) -> Result<(), HostProblem> {
    if name.is_empty() || name.len() > 253 {
        return Err(HostProblem::NameLength);
    }
    if name.contains('*') {
        return Err(HostProblem::Wildcard);
    }
    for label in name.split('.') {
        let valid = (1..=63).contains(&label.len())
            && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
            && !label.starts_with('-')
            && !label.ends_with('-');
        if !valid {
            return Err(HostProblem::Label(label.to_string()));
        }
    }
    Ok(())
}
