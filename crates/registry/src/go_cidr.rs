//! CIDR parsing and containment as kube-apiserver's validation sees them: `ParseCIDRSloppy`
//! (`k8s.io/utils/net`, Go 1.16's `net.ParseCIDR` kept for stored values, so IPv4 octets may
//! carry leading zeros) and Go's `net.IPNet.Contains` and `IPMask.Size` over the result.
//!
//! Addresses keep Go's byte forms, because containment depends on them: an IPv4 CIDR's
//! network address is 4 bytes, an IPv6 CIDR's 16 (an IPv4-mapped IPv6 CIDR stays 16 bytes
//! and compares as IPv4 with the last 4 bytes of its mask, as Go does).

/// Go's `big`: the bound of its decimal and hexadecimal field parsers.
const BIG: u32 = 0xFF_FFFF;

/// A parsed CIDR: its network address (masked) and prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cidr {
    /// The masked address: 4 bytes for an IPv4 CIDR, 16 for an IPv6 one.
    network: Vec<u8>,
    /// The mask in Go's form: 4 or 16 bytes.
    mask: Vec<u8>,
    /// The prefix length (`IPMask.Size`'s ones).
    ones: u32,
}

impl Cidr {
    /// `ParseCIDRSloppy`; `None` where Go returns an error.
    pub fn parse(s: &str) -> Option<Cidr> {
        let (addr, mask) = s.split_once('/')?;
        let (ip, bits) = match parse_ipv4(addr.as_bytes()) {
            Some(v4) => (v4, 32),
            None => (parse_ipv6(addr.as_bytes())?, 128),
        };
        let (n, used) = dtoi(mask.as_bytes())?;
        if used != mask.len() || n > bits {
            return None;
        }
        let mask = cidr_mask(n, bits);
        let network = masked(&ip, &mask)?;
        Some(Cidr {
            network,
            mask,
            ones: n,
        })
    }

    /// The prefix length.
    pub fn prefix_len(&self) -> u32 {
        self.ones
    }

    /// `IPNet.Contains(other.IP)`: whether this network holds `other`'s network address.
    pub fn contains_network_of(&self, other: &Cidr) -> bool {
        let net = to4(&self.network).unwrap_or(&self.network);
        let mask: &[u8] = match (self.mask.len(), net.len()) {
            (4, 4) => &self.mask,
            (16, 4) => &self.mask[12..],
            (16, 16) => &self.mask,
            _ => return false,
        };
        let ip = to4(&other.network).unwrap_or(&other.network);
        ip.len() == net.len()
            && net
                .iter()
                .zip(ip)
                .zip(mask)
                .all(|((n, i), m)| n & m == i & m)
    }
}

/// `ParseIPSloppy` of an address: `Some(true)` for IPv4 (an IPv4-mapped IPv6 address too,
/// as Go's `To4` sees it), `Some(false)` for IPv6, `None` where Go returns nil.
pub fn ip_is_v4(s: &str) -> Option<bool> {
    let ip = parse_ipv4(s.as_bytes()).or_else(|| parse_ipv6(s.as_bytes()))?;
    Some(to4(&ip).is_some())
}

/// Go's `dtoi`: a decimal prefix of `s`, with how many bytes it used.
fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + u32::from(s[i] - b'0');
        if n >= BIG {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// Go's `xtoi`: a hexadecimal prefix of `s`, with how many bytes it used.
fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() {
        let Some(d) = char::from(s[i]).to_digit(16) else {
            break;
        };
        n = n * 16 + d;
        if n >= BIG {
            return None;
        }
        i += 1;
    }
    (i > 0).then_some((n, i))
}

/// The 16-byte IPv4-in-IPv6 form Go's `IPv4` returns.
fn v4_in_v6(p: [u8; 4]) -> Vec<u8> {
    let mut ip = vec![0u8; 10];
    ip.extend_from_slice(&[0xff, 0xff]);
    ip.extend_from_slice(&p);
    ip
}

/// Go 1.16's `parseIPv4` (leading zeros allowed): the 16-byte form.
fn parse_ipv4(mut s: &[u8]) -> Option<Vec<u8>> {
    let mut p = [0u8; 4];
    for (i, octet) in p.iter_mut().enumerate() {
        if s.is_empty() {
            return None;
        }
        if i > 0 {
            if s[0] != b'.' {
                return None;
            }
            s = &s[1..];
        }
        let (n, c) = dtoi(s)?;
        *octet = u8::try_from(n).ok()?;
        s = &s[c..];
    }
    s.is_empty().then(|| v4_in_v6(p))
}

/// Go 1.16's `parseIPv6`, with its ellipsis and trailing IPv4 rules.
fn parse_ipv6(mut s: &[u8]) -> Option<Vec<u8>> {
    let mut ip = vec![0u8; 16];
    let mut ellipsis: Option<usize> = None;
    if s.starts_with(b"::") {
        ellipsis = Some(0);
        s = &s[2..];
        if s.is_empty() {
            return Some(ip);
        }
    }
    let mut i = 0;
    while i < 16 {
        let (n, c) = xtoi(s)?;
        if n > 0xFFFF {
            return None;
        }
        if c < s.len() && s[c] == b'.' {
            if (ellipsis.is_none() && i != 12) || i + 4 > 16 {
                return None;
            }
            let v4 = parse_ipv4(s)?;
            ip[i..i + 4].copy_from_slice(&v4[12..]);
            s = &[];
            i += 4;
            break;
        }
        ip[i] = (n >> 8) as u8;
        ip[i + 1] = (n & 0xff) as u8;
        i += 2;
        s = &s[c..];
        if s.is_empty() {
            break;
        }
        if s[0] != b':' || s.len() == 1 {
            return None;
        }
        s = &s[1..];
        if s[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            s = &s[1..];
            if s.is_empty() {
                break;
            }
        }
    }
    if !s.is_empty() {
        return None;
    }
    match ellipsis {
        Some(e) if i < 16 => {
            let n = 16 - i;
            ip.copy_within(e..i, e + n);
            ip[e..e + n].fill(0);
        }
        None if i < 16 => return None,
        Some(_) => return None,
        None => {}
    }
    Some(ip)
}

/// Go's `CIDRMask(ones, bits)`.
fn cidr_mask(ones: u32, bits: u32) -> Vec<u8> {
    (0..bits / 8)
        .map(|byte| {
            let set = ones.saturating_sub(byte * 8).min(8);
            if set == 0 {
                0
            } else {
                0xffu8 << (8 - set)
            }
        })
        .collect()
}

/// Go's `IP.To4`.
fn to4(ip: &[u8]) -> Option<&[u8]> {
    match ip.len() {
        4 => Some(ip),
        16 if ip[..10].iter().all(|b| *b == 0) && ip[10] == 0xff && ip[11] == 0xff => {
            Some(&ip[12..])
        }
        _ => None,
    }
}

/// Go's `IP.Mask`.
fn masked(ip: &[u8], mask: &[u8]) -> Option<Vec<u8>> {
    let mut mask = mask;
    let mut ip = ip;
    if mask.len() == 16 && ip.len() == 4 && mask[..12].iter().all(|b| *b == 0xff) {
        mask = &mask[12..];
    }
    if mask.len() == 4 && ip.len() == 16 && to4(ip).is_some() {
        ip = &ip[12..];
    }
    (ip.len() == mask.len()).then(|| ip.iter().zip(mask).map(|(a, m)| a & m).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> Cidr {
        Cidr::parse(s).unwrap_or_else(|| panic!("{s} did not parse"))
    }

    #[test]
    fn parses_what_go_1_16_parses() {
        for ok in [
            "10.0.0.0/8",
            "010.000.000.001/024",
            "0.0.0.0/0",
            "192.168.1.1/32",
            "::/0",
            "2001:db8::/64",
            "2001:DB8::1/128",
            "::ffff:10.0.0.0/104",
            "1:2:3:4:5:6:7:8/64",
            "1:2:3:4:5:6:1.2.3.4/96",
            "::1.2.3.4/128",
            "1::/16",
        ] {
            assert!(Cidr::parse(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "10.0.0.0",
            "10.0.0.0/",
            "10.0.0.0/33",
            "10.0.0.256/8",
            "10.0.0/8",
            "10.0.0.0.0/8",
            "10.0.0.0/-1",
            "10.0.0.0/8a",
            " 10.0.0.0/8",
            "2001:db8::/129",
            "1:2:3:4:5:6:7:8:9/64",
            "1:2:3:4:5:6:7::8/64x",
            "1::2::3/64",
            "1:2:3:4:5:1.2.3.4/64",
            "12345::/16",
            "1:/16",
            "abc/8",
        ] {
            assert!(Cidr::parse(bad).is_none(), "{bad:?} parsed");
        }
    }

    #[test]
    fn the_network_address_is_masked_and_keeps_gos_length() {
        let c = parse("10.1.2.3/16");
        assert_eq!(c.network, vec![10, 1, 0, 0]);
        assert_eq!(c.prefix_len(), 16);
        let v6 = parse("2001:db8:1:2::5/48");
        assert_eq!(v6.network.len(), 16);
        assert_eq!(&v6.network[..6], &[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        assert!(v6.network[6..].iter().all(|b| *b == 0));
        assert_eq!(parse("::ffff:10.0.0.0/104").network.len(), 16);
    }

    #[test]
    fn containment_is_gos_ipnet_contains() {
        let net = parse("192.168.0.0/16");
        assert!(net.contains_network_of(&parse("192.168.1.0/24")));
        assert!(net.contains_network_of(&parse("192.168.0.0/16")));
        assert!(!net.contains_network_of(&parse("10.0.0.0/24")));
        // Only the network address counts: a wider network may have it inside (the
        // validation's prefix length check refuses that one).
        assert!(parse("10.0.0.0/16").contains_network_of(&parse("10.0.0.0/8")));
        assert!(!net.contains_network_of(&parse("192.168.0.0/8")));
        // IPv4 and IPv6 networks never contain each other...
        assert!(!net.contains_network_of(&parse("2001:db8::/64")));
        assert!(!parse("2001:db8::/32").contains_network_of(&parse("10.0.0.0/8")));
        // ...except through IPv4-mapped addresses, which Go reads as IPv4.
        assert!(net.contains_network_of(&parse("::ffff:192.168.1.0/120")));
        assert!(parse("2001:db8::/32").contains_network_of(&parse("2001:db8:1::/48")));
    }
}
