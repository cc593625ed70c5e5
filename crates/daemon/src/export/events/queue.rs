//! The publishing task's queue and rate: Events wait here, in a compact form, for their turn
//! under `[events] max_per_second`.

use super::EventRequest;
use kube::runtime::events::EventType;
use std::collections::VecDeque;
use std::time::Duration;
use tokio::time::Instant;

/// Events waiting to be published, at most [`EventQueue::bound`] of them.
#[derive(Debug)]
pub struct EventQueue {
    pending: VecDeque<Waiting>,
    min: usize,
}

/// A queued Event, its reference and note as one JSON text. At 20 Events a second a wave of
/// drift waits long (50,000 objects drifting at once: 40 minutes), and a request's seven
/// optional strings plus its note cost about 500 bytes where this costs about 200 (issue #11).
#[derive(Debug)]
struct Waiting {
    type_: EventType,
    reason: &'static str,
    text: Box<str>,
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

impl EventQueue {
    pub fn new(min: usize) -> EventQueue {
        EventQueue {
            pending: VecDeque::new(),
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
        if self.pending.len() >= self.bound(tracked) {
            return Err(request.reason);
        }
        self.pending.push_back(Waiting::new(request));
        Ok(())
    }

    pub fn pop(&mut self) -> Option<EventRequest> {
        self.pending.pop_front().map(Waiting::request)
    }

    pub fn len(&self) -> usize {
        self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
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
