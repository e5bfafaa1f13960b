//! Reading the TCP streams of a pcap or pcapng capture (with `pcap-file` and `etherparse`), in the
//! order the capture saw them: connections opening, bytes in each direction in sequence order, and
//! connections closing.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use etherparse::{NetSlice, SlicedPacket, TransportSlice};
use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::DataLink;

/// Most out-of-order bytes held per direction while waiting for a gap to fill. Beyond it the gap
/// is given up: the bytes after it are taken as they are and the gap is reported.
const MAX_OUT_OF_ORDER: usize = 8 * 1024 * 1024;

/// Why a capture cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Neither pcap nor pcapng, or broken.
    #[error("not a readable pcap or pcapng capture: {0}")]
    Format(String),
    /// A link type this reader does not take.
    #[error("unsupported link type {0:?}")]
    LinkType(DataLink),
}

/// One TCP connection's identity: the client (who sent SYN) and the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoints {
    /// The side that dialled.
    pub client: SocketAddr,
    /// The side that listened.
    pub server: SocketAddr,
}

/// What happened on a TCP connection.
#[derive(Debug, Clone, PartialEq)]
pub enum TcpEvent {
    /// The connection opened (first packet seen).
    Open(Endpoints),
    /// Bytes, in order, from the client (`true`) or the server.
    Data {
        /// Whether the client sent them.
        from_client: bool,
        /// The bytes.
        bytes: Vec<u8>,
    },
    /// Bytes are missing from a direction (not captured): the stream after the gap is unreliable.
    Gap {
        /// Whether in the client's direction.
        from_client: bool,
        /// How many bytes are missing.
        missing: u64,
    },
    /// The connection ended (FIN both ways, or RST).
    Close,
}

/// An event of a connection at a time.
#[derive(Debug, Clone, PartialEq)]
pub struct Timed {
    /// The capture's timestamp (since the Unix epoch).
    pub time: Duration,
    /// The connection, numbered from 1 in order of appearance.
    pub conn: u64,
    /// What happened.
    pub event: TcpEvent,
}

#[derive(Debug, Default)]
struct Direction {
    next: Option<u32>,
    ahead: BTreeMap<u32, Vec<u8>>,
    ahead_bytes: usize,
    fin: bool,
}

impl Direction {
    /// Takes a segment; returns the bytes now in order, and a gap if one was given up.
    fn segment(&mut self, seq: u32, syn: bool, payload: &[u8]) -> (Vec<u8>, Option<u64>) {
        let start = if syn { seq.wrapping_add(1) } else { seq };
        let next = *self.next.get_or_insert(start);
        let mut out = Vec::new();
        let mut gap = None;
        let mut pos = next;
        if !payload.is_empty() {
            let offset = start.wrapping_sub(next) as i32;
            let end = start.wrapping_add(payload.len() as u32);
            if offset <= 0 {
                let skip = offset.unsigned_abs() as usize;
                if skip < payload.len() {
                    out.extend_from_slice(&payload[skip..]);
                    pos = end;
                }
            } else if self.ahead_bytes + payload.len() <= MAX_OUT_OF_ORDER {
                self.ahead_bytes += payload.len();
                self.ahead.insert(start, payload.to_vec());
            } else {
                gap = Some(u64::from(offset.unsigned_abs()));
                out.extend_from_slice(payload);
                pos = end;
                self.ahead.clear();
                self.ahead_bytes = 0;
            }
        }
        // Pull in what now follows.
        while let Some((&s, _)) = self.ahead.iter().next() {
            let off = s.wrapping_sub(pos) as i32;
            if off > 0 {
                break;
            }
            let Some(data) = self.ahead.remove(&s) else {
                break;
            };
            self.ahead_bytes -= data.len();
            let skip = off.unsigned_abs() as usize;
            if skip < data.len() {
                out.extend_from_slice(&data[skip..]);
                pos = s.wrapping_add(data.len() as u32);
            }
        }
        self.next = Some(pos);
        (out, gap)
    }
}

#[derive(Debug)]
struct Conn {
    id: u64,
    ends: Endpoints,
    dirs: [Direction; 2],
}

/// Turns packets into TCP stream events.
#[derive(Debug, Default)]
pub struct Reassembler {
    conns: HashMap<(SocketAddr, SocketAddr), Conn>,
    /// Connections that closed: their last ACKs open nothing new; a new SYN does.
    closed: std::collections::HashSet<(SocketAddr, SocketAddr)>,
    next_id: u64,
    server_ports: Vec<u16>,
    /// Packets that were not TCP over IP (skipped).
    pub skipped_packets: u64,
    /// Packets read.
    pub packets: u64,
}

impl Reassembler {
    /// A reassembler that takes connections to any port, or only to `server_ports` if not empty.
    pub fn new(server_ports: Vec<u16>) -> Self {
        Reassembler {
            server_ports,
            ..Reassembler::default()
        }
    }

    fn key(a: SocketAddr, b: SocketAddr) -> (SocketAddr, SocketAddr) {
        if a <= b {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// Takes one link-layer packet; returns what it means.
    pub fn packet(&mut self, time: Duration, link: DataLink, data: &[u8]) -> Vec<Timed> {
        self.packets += 1;
        let sliced = match link {
            DataLink::ETHERNET => SlicedPacket::from_ethernet(data),
            DataLink::LINUX_SLL => SlicedPacket::from_linux_sll(data),
            DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => SlicedPacket::from_ip(data),
            DataLink::NULL | DataLink::LOOP => match data.get(4..) {
                Some(rest) => SlicedPacket::from_ip(rest),
                None => {
                    self.skipped_packets += 1;
                    return Vec::new();
                }
            },
            _ => {
                self.skipped_packets += 1;
                return Vec::new();
            }
        };
        let Ok(p) = sliced else {
            self.skipped_packets += 1;
            return Vec::new();
        };
        let (src, dst): (IpAddr, IpAddr) = match &p.net {
            Some(NetSlice::Ipv4(ip)) => (
                ip.header().source_addr().into(),
                ip.header().destination_addr().into(),
            ),
            Some(NetSlice::Ipv6(ip)) => (
                ip.header().source_addr().into(),
                ip.header().destination_addr().into(),
            ),
            _ => {
                self.skipped_packets += 1;
                return Vec::new();
            }
        };
        let Some(TransportSlice::Tcp(tcp)) = &p.transport else {
            self.skipped_packets += 1;
            return Vec::new();
        };
        let from = SocketAddr::new(src, tcp.source_port());
        let to = SocketAddr::new(dst, tcp.destination_port());
        self.tcp(time, from, to, tcp)
    }

    fn tcp(
        &mut self,
        time: Duration,
        from: SocketAddr,
        to: SocketAddr,
        tcp: &etherparse::TcpSlice<'_>,
    ) -> Vec<Timed> {
        let key = Self::key(from, to);
        let mut out = Vec::new();
        if !self.conns.contains_key(&key) {
            if self.closed.contains(&key) && (!tcp.syn() || tcp.ack()) {
                return out;
            }
            self.closed.remove(&key);
            if tcp.rst() || (tcp.fin() && tcp.payload().is_empty()) {
                return out; // the tail of a connection that started before the capture
            }
            // The client sent SYN; without one, the server is the side on a wanted port, or the
            // lower port.
            let (client, server) = if tcp.syn() {
                if tcp.ack() {
                    (to, from)
                } else {
                    (from, to)
                }
            } else if self.server_ports.contains(&from.port()) {
                (to, from)
            } else if self.server_ports.contains(&to.port()) || to.port() < from.port() {
                (from, to)
            } else {
                (to, from)
            };
            if !self.server_ports.is_empty() && !self.server_ports.contains(&server.port()) {
                return out;
            }
            self.next_id += 1;
            let ends = Endpoints { client, server };
            self.conns.insert(
                key,
                Conn {
                    id: self.next_id,
                    ends,
                    dirs: [Direction::default(), Direction::default()],
                },
            );
            out.push(Timed {
                time,
                conn: self.next_id,
                event: TcpEvent::Open(ends),
            });
        }
        let Some(conn) = self.conns.get_mut(&key) else {
            return out;
        };
        let from_client = from == conn.ends.client;
        let dir = &mut conn.dirs[usize::from(!from_client)];
        let (bytes, gap) = dir.segment(tcp.sequence_number(), tcp.syn(), tcp.payload());
        if let Some(missing) = gap {
            out.push(Timed {
                time,
                conn: conn.id,
                event: TcpEvent::Gap {
                    from_client,
                    missing,
                },
            });
        }
        if !bytes.is_empty() {
            out.push(Timed {
                time,
                conn: conn.id,
                event: TcpEvent::Data { from_client, bytes },
            });
        }
        if tcp.fin() {
            dir.fin = true;
        }
        let done = tcp.rst() || (conn.dirs[0].fin && conn.dirs[1].fin);
        if done {
            let id = conn.id;
            self.conns.remove(&key);
            self.closed.insert(key);
            out.push(Timed {
                time,
                conn: id,
                event: TcpEvent::Close,
            });
        }
        out
    }
}

/// Reads a whole capture (pcap or pcapng, by its magic number) and returns its TCP events in order,
/// with the reassembler's counts.
pub fn read_capture<R: Read>(
    mut input: R,
    server_ports: Vec<u16>,
) -> Result<(Vec<Timed>, Reassembler), CaptureError> {
    let mut data = Vec::new();
    input
        .read_to_end(&mut data)
        .map_err(|e| CaptureError::Format(e.to_string()))?;
    let mut r = Reassembler::new(server_ports);
    let mut out = Vec::new();
    let magic = data.get(..4).unwrap_or_default();
    if magic == [0x0A, 0x0D, 0x0D, 0x0A] {
        let mut reader =
            PcapNgReader::new(&data[..]).map_err(|e| CaptureError::Format(e.to_string()))?;
        let mut links = Vec::new();
        while let Some(block) = reader.next_block() {
            match block.map_err(|e| CaptureError::Format(e.to_string()))? {
                Block::InterfaceDescription(i) => links.push(i.linktype),
                Block::EnhancedPacket(p) => {
                    let link = links
                        .get(p.interface_id as usize)
                        .copied()
                        .unwrap_or(DataLink::ETHERNET);
                    out.extend(r.packet(p.timestamp, link, &p.data));
                }
                Block::SimplePacket(p) => {
                    let link = links.first().copied().unwrap_or(DataLink::ETHERNET);
                    out.extend(r.packet(Duration::ZERO, link, &p.data));
                }
                _ => {}
            }
        }
    } else {
        let mut reader =
            PcapReader::new(&data[..]).map_err(|e| CaptureError::Format(e.to_string()))?;
        let link = reader.header().datalink;
        if !matches!(
            link,
            DataLink::ETHERNET
                | DataLink::LINUX_SLL
                | DataLink::RAW
                | DataLink::IPV4
                | DataLink::IPV6
                | DataLink::NULL
                | DataLink::LOOP
        ) {
            return Err(CaptureError::LinkType(link));
        }
        while let Some(packet) = reader.next_packet() {
            let p = packet.map_err(|e| CaptureError::Format(e.to_string()))?;
            out.extend(r.packet(p.timestamp, link, &p.data));
        }
    }
    Ok((out, r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_order_and_retransmitted_segments_come_out_once_in_order() {
        let mut d = Direction::default();
        assert_eq!(d.segment(99, true, b""), (vec![], None));
        assert_eq!(d.segment(103, false, b"def"), (vec![], None));
        assert_eq!(d.segment(100, false, b"abc"), (b"abcdef".to_vec(), None));
        assert_eq!(d.segment(100, false, b"abcdefgh"), (b"gh".to_vec(), None));
        assert_eq!(d.segment(108, false, b"i"), (b"i".to_vec(), None));
    }
}
