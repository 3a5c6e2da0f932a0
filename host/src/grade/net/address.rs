//! Which addresses are inside: those of this machine and its networks, refused unless an
//! address pattern grants them, whatever name led to them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// An IPv4-mapped IPv6 address as the IPv4 address it is.
pub(super) fn canonical(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(address, IpAddr::V4),
        IpAddr::V4(_) => address,
    }
}

/// Loopback, private, link-local, shared (carrier-grade NAT), unique-local, multicast,
/// broadcast, unspecified and reserved addresses, and IPv6 addresses that embed an IPv4 one of
/// these or translate to IPv4 addresses they do not show.
pub(super) fn inward(address: IpAddr) -> bool {
    match canonical(address) {
        IpAddr::V4(v4) => inward_v4(v4),
        IpAddr::V6(v6) => inward_v6(v6),
    }
}

fn inward_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        // "This network" (0/8) and shared address space (100.64/10).
        || a == 0
        || (a == 100 && b & 0xc0 == 64)
        // IETF protocol assignments (192.0.0/24, where some clouds answer metadata),
        // benchmarking networks (198.18/15), the 6to4 relays' anycast (192.88.99/24) and the
        // reserved 240/4.
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && b & 0xfe == 18)
        || (a == 192 && b == 88 && c == 99)
        || a >= 240
        // Azure's host endpoint (its metadata and agent service), public by number.
        || v4 == Ipv4Addr::new(168, 63, 129, 16)
}

fn inward_v6(v6: Ipv6Addr) -> bool {
    let [first, ..] = v6.segments();
    let embedded = |v6: Ipv6Addr| {
        let o = v6.octets();
        Ipv4Addr::new(o[12], o[13], o[14], o[15])
    };
    v6.is_loopback()
        || v6.is_unspecified()
        || v6.is_multicast()
        // Unique-local fc00::/7, link-local fe80::/10, site-local fec0::/10.
        || first & 0xfe00 == 0xfc00
        || first & 0xffc0 == 0xfe80
        || first & 0xffc0 == 0xfec0
        // IPv4-compatible ::a.b.c.d and NAT64 64:ff9b::/96 reach the IPv4 address they hold,
        // and 6to4 2002:AABB:CCDD::/48 the one in its second and third groups.
        || (v6.segments()[..6] == [0; 6] && inward_v4(embedded(v6)))
        // IPv4-translated ::ffff:0:a.b.c.d (SIIT) reaches the IPv4 address it holds too.
        || (v6.segments()[..6] == [0, 0, 0, 0, 0xffff, 0] && inward_v4(embedded(v6)))
        || (v6.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] && inward_v4(embedded(v6)))
        || (first == 0x2002 && inward_v4(six_to_four(v6)))
        // Local-use NAT64 (64:ff9b:1::/48) and Teredo (2001::/32) reach IPv4 addresses that
        // cannot be told from the address alone.
        || v6.segments()[..3] == [0x64, 0xff9b, 1]
        || v6.segments()[..2] == [0x2001, 0]
}

/// Whether `address` is one of this machine's own (an address of one of its interfaces, public
/// ones too): asked of the system each time, as addresses come and go.
pub(super) fn own(address: IpAddr) -> bool {
    let address = canonical(address);
    if_addrs::get_if_addrs()
        .is_ok_and(|interfaces| interfaces.iter().any(|i| canonical(i.ip()) == address))
}

/// The IPv4 address a 6to4 address carries.
fn six_to_four(v6: Ipv6Addr) -> Ipv4Addr {
    let o = v6.octets();
    Ipv4Addr::new(o[2], o[3], o[4], o[5])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_and_network_addresses_are_inward_public_ones_are_not() {
        for inside in [
            "127.0.0.1",
            "127.8.9.10",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::10.0.0.1",
            "192.0.0.192",
            "192.88.99.1",
            "168.63.129.16",
            "::ffff:0:10.0.0.1",
            "198.18.0.1",
            "198.19.255.1",
            "240.0.0.1",
            "2002:7f00:1::1",
            "2002:a9fe:a9fe::",
            "64:ff9b:1::8.8.8.8",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
        ] {
            assert!(inward(inside.parse().unwrap()), "{inside}");
        }
        for outside in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:2800:220:1::1",
            "64:ff9b::8.8.8.8",
            "192.0.2.1",
            "198.20.0.1",
            "2002:808:808::1",
            "2001:4860:4860::8888",
        ] {
            assert!(!inward(outside.parse().unwrap()), "{outside}");
        }
    }

    #[test]
    fn the_machines_own_addresses_are_its_own() {
        let interfaces = if_addrs::get_if_addrs().expect("the interfaces");
        for interface in &interfaces {
            assert!(own(interface.ip()), "{}", interface.ip());
        }
        assert!(own("127.0.0.1".parse().unwrap()));
        assert!(!own("192.0.2.1".parse().unwrap()));
    }
}
