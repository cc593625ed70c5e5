//! The publishing task's queue and rate: Events wait here, in a compact form, for their turn
//! under `[events] max_per_second`.

use super::EventRequest;
use kube::runtime::events::EventType;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// Queued Events packed together per block: a block is compressed as one text, where the
/// references and notes of neighbouring Events repeat each other.
const BLOCK: usize = 64;

/// zstd's fastest regular level: a block is packed once and unpacked once.
const LEVEL: i32 = 1;

/// Events waiting to be published, at most [`EventQueue::bound`] of them, oldest first:
/// `head` (unpacked, next out), then the packed `blocks`, then `tail` (newest, not yet a
/// full block).
///
/// At 20 Events a second a wave of drift waits long (50,000 objects drifting at once: 40
/// minutes). One Event's reference and note as JSON text is about 270 bytes; packed in
/// blocks of [`BLOCK`] they cost a fraction of that (the queue was the largest
/// thing an edit wave added after the drift itself).
#[derive(Debug)]
pub struct EventQueue {
    head: VecDeque<Waiting>,
    blocks: VecDeque<Block>,
    tail: Vec<Waiting>,
    len: usize,
    min: usize,
}

/// A queued Event, its reference and note as one JSON text.
#[derive(Debug)]
struct Waiting {
    type_: EventType,
    reason: &'static str,
    text: Box<str>,
}

/// [`BLOCK`] Events: their texts compressed together, each preceded by its length.
#[derive(Debug)]
struct Block {
    kinds: Box<[(EventType, &'static str)]>,
    packed: Box<[u8]>,
    unpacked_len: usize,
}

impl Waiting {
    fn new(request: EventRequest) -> Waiting {
        let text = serde_json::to_string(&(&request.reference, &request.note))
            .expect("a reference and a note serialize");
        Waiting {
            type_: request.type_,
            reason: request.reason,
            text: text.into_boxed_str(),
        }
    }

    fn request(self) -> EventRequest {
        let (reference, note) =
            serde_json::from_str(&self.text).expect("serialized by Waiting::new");
        EventRequest {
            reference,
            type_: self.type_,
            reason: self.reason,
            note,
        }
    }
}

impl Block {
    fn pack(waiting: Vec<Waiting>) -> Block {
        let mut raw = Vec::new();
        for w in &waiting {
            raw.extend_from_slice(&(w.text.len() as u32).to_le_bytes());
            raw.extend_from_slice(w.text.as_bytes());
        }
        Block {
            kinds: waiting.iter().map(|w| (w.type_, w.reason)).collect(),
            packed: zstd::bulk::compress(&raw, LEVEL)
                .expect("zstd compresses a buffer in memory")
                .into_boxed_slice(),
            unpacked_len: raw.len(),
        }
    }

    fn unpack(self) -> impl Iterator<Item = Waiting> {
        let raw =
            zstd::bulk::decompress(&self.packed, self.unpacked_len).expect("packed by Block::pack");
        let mut at = 0;
        self.kinds
            .into_vec()
            .into_iter()
            .map(move |(type_, reason)| {
                let len = u32::from_le_bytes(raw[at..at + 4].try_into().expect("4 bytes")) as usize;
                let text =
                    std::str::from_utf8(&raw[at + 4..at + 4 + len]).expect("packed from a str");
                at += 4 + len;
                Waiting {
                    type_,
                    reason,
                    text: text.into(),
                }
            })
    }
}

impl EventQueue {
    pub fn new(min: usize) -> EventQueue {
        EventQueue {
            head: VecDeque::new(),
            blocks: VecDeque::new(),
            tail: Vec::new(),
            len: 0,
            min,
        }
    }

    /// How many Events may wait when `tracked` objects (and locks) are judged: settled drift
    /// owes at most a Detected and a Resolved per object before the next is folded.
    pub fn bound(&self, tracked: usize) -> usize {
        self.min.max(tracked.saturating_mul(2))
    }

    /// Queues `request`; at the bound, drops it and says which reason was dropped.
    pub fn push(&mut self, request: EventRequest, tracked: usize) -> Result<(), &'static str> {
        if self.len >= self.bound(tracked) {
            return Err(request.reason);
        }
        self.tail.push(Waiting::new(request));
        if self.tail.len() == BLOCK {
            let full = std::mem::take(&mut self.tail);
            self.blocks.push_back(Block::pack(full));
        }
        self.len += 1;
        Ok(())
    }

    pub fn pop(&mut self) -> Option<EventRequest> {
        if self.head.is_empty() {
            match self.blocks.pop_front() {
                Some(block) => self.head.extend(block.unpack()),
                None => self.head.extend(self.tail.drain(..)),
            }
        }
        let next = self.head.pop_front()?;
        self.len -= 1;
        Some(next.request())
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// A token bucket: `burst` Events at once, then `per_second` on average.
#[derive(Debug)]
pub struct RateLimit {
    per_second: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl RateLimit {
    pub fn new(per_second: f64, burst: u32, now: Instant) -> RateLimit {
        let burst = f64::from(burst.max(1));
        RateLimit {
            per_second,
            burst,
            tokens: burst,
            at: now,
        }
    }

    /// When the next Event may go (`now` if a token is there).
    pub fn ready_at(&mut self, now: Instant) -> Instant {
        self.refill(now);
        if self.tokens >= 1.0 {
            return now;
        }
        now + Duration::from_secs_f64((1.0 - self.tokens) / self.per_second)
    }

    /// Takes a token for an Event sent at `now` (which must be at or after `ready_at`).
    pub fn take(&mut self, now: Instant) {
        self.refill(now);
        self.tokens = (self.tokens - 1.0).max(0.0);
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.per_second).min(self.burst);
        self.at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ObjectReference;

    fn request(n: usize) -> EventRequest {
        EventRequest {
            reference: ObjectReference {
                kind: Some("Lease".into()),
                namespace: Some("driftd".into()),
                name: Some("driftd".into()),
                ..Default::default()
            },
            type_: EventType::Warning,
            reason: "DriftDetected",
            note: format!("object {n}"),
        }
    }

    #[test]
    fn the_queue_holds_a_detected_and_a_resolved_per_tracked_object() {
        let mut queue = EventQueue::new(1000);
        assert_eq!(queue.bound(10), 1000, "small states get queue_min");
        for n in 0..10_000 {
            assert!(queue.push(request(n), 5_000).is_ok(), "event {n} kept");
        }
        assert!(
            queue.push(request(10_000), 5_000).is_err(),
            "past the bound"
        );
        assert_eq!(queue.len(), 10_000);
        assert_eq!(queue.pop().unwrap().note, "object 0", "first in, first out");
    }

    #[test]
    fn a_queued_event_comes_out_as_it_went_in() {
        let mut queue = EventQueue::new(10);
        let sent = EventRequest {
            reference: ObjectReference {
                api_version: Some("apps/v1".into()),
                kind: Some("Deployment".into()),
                name: Some("web".into()),
                namespace: Some("shop".into()),
                uid: Some("0b5c4a3e-1111-4222-8333-944455556666".into()),
                resource_version: Some("42".into()),
                field_path: None,
            },
            type_: EventType::Normal,
            reason: "DriftResolved",
            note: "2 field(s): \"quoted\", ünïcode, new\nline".into(),
        };
        queue.push(sent.clone(), 1).unwrap();
        let back = queue.pop().unwrap();
        assert_eq!(back.reference, sent.reference);
        assert_eq!(back.type_, sent.type_);
        assert_eq!((back.reason, back.note), (sent.reason, sent.note));
        assert!(queue.is_empty());
    }

    /// A DriftDetected Event as the engine queues them, for object `n`.
    fn detected(n: usize) -> EventRequest {
        EventRequest {
            reference: ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("ConfigMap".into()),
                name: Some(format!("obj-{n}")),
                namespace: Some(format!("ns-{}", n % 50)),
                uid: Some(format!("6f1c7c1e-3a8e-4d0b-9d55-{n:012}")),
                resource_version: Some(format!("{}", 100_000 + n * 7)),
                field_path: None,
            },
            type_: if n.is_multiple_of(3) {
                EventType::Normal
            } else {
                EventType::Warning
            },
            reason: if n.is_multiple_of(3) {
                "DriftResolved"
            } else {
                "DriftDetected"
            },
            note: format!(
                "1 field(s) differ: data.color (by kubectl-edit-{n}); desired by revision 1 of source bench"
            ),
        }
    }

    #[test]
    fn events_come_out_in_order_across_packed_blocks() {
        let mut queue = EventQueue::new(10);
        let mut next_in = 0;
        let mut next_out = 0;
        // Pushes and pops interleaved, so every path is taken: a pop from the tail, from an
        // unpacked block, and pushes while a block is half read.
        for round in 0..40 {
            for _ in 0..(round * 7 % 150) {
                queue.push(detected(next_in), 100_000).unwrap();
                next_in += 1;
            }
            for _ in 0..(round * 5 % 120) {
                let Some(out) = queue.pop() else { break };
                let want = detected(next_out);
                assert_eq!(out.note, want.note, "event {next_out}");
                assert_eq!(out.reference, want.reference, "event {next_out}");
                assert_eq!((out.type_, out.reason), (want.type_, want.reason));
                next_out += 1;
            }
            assert_eq!(queue.len(), next_in - next_out);
        }
        while let Some(out) = queue.pop() {
            assert_eq!(out.note, detected(next_out).note);
            next_out += 1;
        }
        assert_eq!(next_out, next_in);
        assert!(queue.is_empty());
        assert!(queue.pop().is_none());
    }

    #[test]
    fn queued_events_are_held_packed() {
        let mut queue = EventQueue::new(10);
        let mut text = 0;
        for n in 0..BLOCK * 20 {
            text += Waiting::new(detected(n)).text.len();
            queue.push(detected(n), 100_000).unwrap();
        }
        assert_eq!(queue.blocks.len(), 20, "every full block is packed");
        let packed: usize = queue.blocks.iter().map(|b| b.packed.len()).sum();
        assert!(
            packed * 3 < text,
            "{packed} packed bytes for {text} of text"
        );
    }

    #[test]
    fn the_rate_limit_lets_a_burst_through_then_spaces_events() {
        let start = Instant::now();
        let mut limit = RateLimit::new(10.0, 3, start);
        for _ in 0..3 {
            assert_eq!(limit.ready_at(start), start);
            limit.take(start);
        }
        let next = limit.ready_at(start);
        assert_eq!(next - start, Duration::from_millis(100));
        limit.take(next);
        assert_eq!(limit.ready_at(next) - next, Duration::from_millis(100));
        // Idle time refills up to the burst, no further.
        let later = next + Duration::from_secs(60);
        for _ in 0..3 {
            assert_eq!(limit.ready_at(later), later);
            limit.take(later);
        }
        assert!(limit.ready_at(later) > later);
    }
}
