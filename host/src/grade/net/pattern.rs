//! A host a grader may reach, as `allow: network:` writes it: `name`, `*.suffix` (one or more
//! labels before the suffix), an IPv4 address or an IPv6 one in brackets, each with an optional
//! `:port`; without one, ports 80 and 443.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPattern {
    host: Host,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    /// Lowercase, without a trailing dot.
    Name(String),
    /// `*.example.com` as `.example.com`.
    Suffix(String),
    Address(IpAddr),
}

/// Why a host pattern cannot be read; the text says how to write one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{pattern}` is not a host: {reason}")]
pub struct PatternError {
    pattern: String,
    reason: &'static str,
}

impl FromStr for HostPattern {
    type Err = PatternError;

    fn from_str(pattern: &str) -> Result<HostPattern, PatternError> {
        let error = |reason| PatternError {
            pattern: pattern.to_string(),
            reason,
        };
        let (host, port) = if let Some(rest) = pattern.strip_prefix('[') {
            let (address, after) = rest
                .split_once(']')
                .ok_or_else(|| error("an IPv6 address in brackets needs its `]`"))?;
            let port = match after {
                "" => None,
                _ => Some(
                    after
                        .strip_prefix(':')
                        .ok_or_else(|| error("write a port after `]` as `:PORT`"))?,
                ),
            };
            let address: std::net::Ipv6Addr = address
                .parse()
                .map_err(|_| error("the text in brackets is not an IPv6 address"))?;
            (Host::Address(IpAddr::V6(address)), port)
        } else {
            let (host, port) = match pattern.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (pattern, None),
            };
            if host.contains(':') {
                return Err(error(
                    "write an IPv6 address in brackets: [2001:db8::1]:443",
                ));
            }
            let host = if let Ok(address) = host.parse::<IpAddr>() {
                Host::Address(address)
            } else if let Some(suffix) = host.strip_prefix("*.") {
                Host::Suffix(format!(".{}", name(suffix).ok_or_else(|| error(NAME))?))
            } else {
                Host::Name(name(host).ok_or_else(|| error(NAME))?)
            };
            (host, port)
        };
        let port = port
            .map(|port| match port.parse::<u16>() {
                Ok(port) if port > 0 => Ok(port),
                _ => Err(error("the port is not a number from 1 to 65535")),
            })
            .transpose()?;
        Ok(HostPattern { host, port })
    }
}

const NAME: &str = "write a host name (api.example.com), `*.` and a suffix (*.example.com), or \
                    an address (127.0.0.1, [::1]), each with an optional `:PORT`";

/// `text` as a host name compares: lowercase, without a trailing dot; none when it is not one.
fn name(text: &str) -> Option<String> {
    let text = text.strip_suffix('.').unwrap_or(text);
    let valid = !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
    valid.then(|| text.to_ascii_lowercase())
}

impl HostPattern {
    fn port_matches(&self, port: u16) -> bool {
        match self.port {
            Some(granted) => granted == port,
            None => port == 80 || port == 443,
        }
    }

    /// Whether a request to the host name `host` (as the URL writes it) on `port` is granted.
    pub fn matches_name(&self, host: &str, port: u16) -> bool {
        let Some(host) = name(host) else {
            return false;
        };
        self.port_matches(port)
            && match &self.host {
                Host::Name(granted) => *granted == host,
                Host::Suffix(suffix) => host.len() > suffix.len() && host.ends_with(suffix),
                Host::Address(_) => false,
            }
    }

    /// Whether a connection to `address` on `port` is granted by address.
    pub fn matches_address(&self, address: IpAddr, port: u16) -> bool {
        self.port_matches(port)
            && matches!(&self.host, Host::Address(granted) if canonical(*granted) == canonical(address))
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
pub(super) fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.host {
            Host::Name(name) => f.write_str(name)?,
            Host::Suffix(suffix) => write!(f, "*{suffix}")?,
            Host::Address(IpAddr::V6(v6)) => write!(f, "[{v6}]")?,
            Host::Address(IpAddr::V4(v4)) => write!(f, "{v4}")?,
        }
        match self.port {
            Some(port) => write!(f, ":{port}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> HostPattern {
        text.parse().unwrap()
    }

    #[test]
    fn names_suffixes_and_ports_match_as_written() {
        let api = pattern("API.example.com.");
        assert!(api.matches_name("api.example.com", 443));
        assert!(api.matches_name("Api.Example.Com.", 80));
        assert!(!api.matches_name("api.example.com", 8080));
        assert!(!api.matches_name("xapi.example.com", 443));
        let any = pattern("*.example.com");
        assert!(any.matches_name("a.example.com", 443));
        assert!(any.matches_name("a.b.example.com", 443));
        assert!(!any.matches_name("example.com", 443));
        assert!(!any.matches_name("badexample.com", 443));
        let port = pattern("api.other.com:8443");
        assert!(port.matches_name("api.other.com", 8443));
        assert!(!port.matches_name("api.other.com", 443));
        assert_eq!(port.to_string(), "api.other.com:8443");
    }

    #[test]
    fn addresses_match_only_addresses() {
        let local = pattern("127.0.0.1:8080");
        assert!(local.matches_address("127.0.0.1".parse().unwrap(), 8080));
        assert!(local.matches_address("::ffff:127.0.0.1".parse().unwrap(), 8080));
        assert!(!local.matches_address("127.0.0.1".parse().unwrap(), 80));
        assert!(!local.matches_name("127.0.0.1", 8080));
        let v6 = pattern("[::1]");
        assert!(v6.matches_address("::1".parse().unwrap(), 443));
        assert_eq!(v6.to_string(), "[::1]");
    }

    #[test]
    fn malformed_patterns_say_how_to_write_one() {
        for bad in [
            "",
            "::1",
            "[::1",
            "[::1]8080",
            "a..b",
            "host:0",
            "host:x",
            "a b",
            "*.",
        ] {
            let error = bad.parse::<HostPattern>().unwrap_err().to_string();
            assert!(
                error.starts_with(&format!("`{bad}` is not a host: ")),
                "{error}"
            );
        }
    }
}
