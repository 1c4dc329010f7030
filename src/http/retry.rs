//! The one retry policy: which failed replies are sent again, and after
//! how long; and [`Retry`], the one count of a request's retries that every
//! sender keeps (the poll loop's requests, a call's exchanges, the
//! session's login and negotiation).

use crate::error::Error;
use crate::http::Reply;

/// The longest pause a `Retry-After` can ask for; a larger one counts as this.
pub const MAX_RETRY_AFTER_MS: u64 = 60_000;

/// python-ironicclient's retries: 409, 503 and connection failures are
/// tried again, `max_retries` times, `interval_ms` apart; better than it,
/// a `Retry-After` in seconds is honoured instead of the fixed interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_retries: u32,
    pub interval_ms: u64,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 5, interval_ms: 2000 }
    }
}

/// Whether an answer of `status` is sent again: 409 Conflict (a node
/// locked by a conductor) and 503 Service Unavailable, as python-ironicclient
/// retries them; Keystone's answers follow the same rule. The one place
/// this is said.
pub fn retryable_status(status: u16) -> bool {
    matches!(status, 409 | 503)
}

/// An error that means the server, or the way to it, is failing for now:
/// what the retry policy retries (a connection failure, 409, 503) still
/// failing after the retries, a 429 Too Many Requests, a server error (5xx:
/// a gateway's 502 or 504 too), or an answer that cannot be used (a proxy's HTML page, a body cut
/// short). A wait or a watch that outlives its process takes such a round
/// again later; any other error (a refusal, a node gone) is final.
pub fn is_outage(e: &Error) -> bool {
    match e {
        Error::Connection(_) | Error::InvalidResponse(_) => true,
        Error::Http(h) => retryable_status(h.status) || h.status == 429 || h.status >= 500,
        _ => false,
    }
}

/// How much later a round lost to an outage is taken again, in seconds:
/// the `n`th in a row waits the `n`th entry, every one after the last
/// entry that (2 s doubling to 5 minutes; see `retryOutages`).
pub const OUTAGE_DELAYS_S: [u16; 9] = [2, 4, 8, 16, 32, 64, 128, 256, 300];

/// A round of a wait or a watch lost to an outage ([`is_outage`]), the
/// `n`th in a row: taken again this much later ([`OUTAGE_DELAYS_S`]).
pub fn outage_delay_ms(n: u32) -> u64 {
    let last = OUTAGE_DELAYS_S.len() - 1;
    let i = (n.max(1) as usize - 1).min(last);
    u64::from(OUTAGE_DELAYS_S.get(i).copied().unwrap_or(OUTAGE_DELAYS_S[last])) * 1000
}

impl RetryPolicy {
    /// After `retries_done` retries, how long to wait before sending again,
    /// or `None` if this reply is final.
    pub fn delay_ms(&self, retries_done: u32, reply: &Reply) -> Option<u64> {
        if retries_done >= self.max_retries {
            return None;
        }
        match reply {
            Reply::Response(r) if retryable_status(r.status) => Some(self.asked_or_interval(r)),
            Reply::Response(_) | Reply::Unusable(_) => None,
            Reply::ConnectionFailed(_) | Reply::TimedOut => Some(self.interval_ms),
        }
    }

    /// How long a loop that polls holds its rounds off after `reply`: a 429
    /// Too Many Requests or a 503 asks for its `Retry-After` (or the
    /// interval), whether or not the request itself is tried again.
    pub fn hold_off_ms(&self, reply: &Reply) -> Option<u64> {
        match reply {
            Reply::Response(r) if matches!(r.status, 429 | 503) => Some(self.asked_or_interval(r)),
            _ => None,
        }
    }

    fn asked_or_interval(&self, r: &crate::http::Response) -> u64 {
        let asked = r.retry_after.as_deref().and_then(retry_after_ms);
        asked.map_or(self.interval_ms, |ms| ms.min(MAX_RETRY_AFTER_MS))
    }
}

/// The retries of one request: how many were made, and when the next is
/// due. The one place a retry is counted and timed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Retry {
    pub made: u32,
}

impl Retry {
    /// When to send again after `reply` at `now` (ms on the caller's
    /// clock), by `latest` at the latest: the try is counted. `None` if the reply is final: the policy
    /// does not retry it, its retries are spent, or the next try would
    /// start after `latest`.
    pub fn next(&mut self, policy: &RetryPolicy, reply: &Reply, now: u64, latest: Option<u64>) -> Option<u64> {
        let at = now.saturating_add(policy.delay_ms(self.made, reply)?);
        if latest.is_some_and(|l| at > l) {
            return None;
        }
        self.made += 1;
        Some(at)
    }

    /// A try that was due was not made (the deadline had passed when its
    /// time came): it is not counted.
    pub fn forgo(&mut self) {
        self.made = self.made.saturating_sub(1);
    }
}

/// `Retry-After` as delta-seconds (any number of digits: a huge one is
/// capped by the caller). An HTTP-date needs a wall clock the core
/// does not have, so it falls back to the fixed interval.
fn retry_after_ms(value: &str) -> Option<u64> {
    let digits = value.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(digits.parse::<u64>().unwrap_or(u64::MAX).saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    use serde_json::Value;

    use crate::error::Error;
    use crate::http::Response;
    use crate::ironic::answers::reply_error;

    #[test]
    fn an_outage_is_the_server_or_the_way_to_it_failing_for_now() {
        use crate::error::HttpError;
        let http = |status| Error::Http(HttpError { status, message: "m".into(), request_id: None });
        for e in [
            Error::Connection("refused".into()),
            Error::InvalidResponse("html".into()),
            http(409),
            http(429),
            http(500),
            http(502),
        ] {
            assert!(is_outage(&e), "{e:?}");
        }
        for e in [http(400), http(401), http(404), http(406), Error::Aborted, Error::InvalidArgument("x".into())] {
            assert!(!is_outage(&e), "{e:?}");
        }
    }

    #[test]
    fn an_outage_is_taken_again_later_and_later_up_to_five_minutes() {
        let delays: Vec<u64> = (1..=10).map(outage_delay_ms).collect();
        assert_eq!(delays, [2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 300000, 300000]);
        assert_eq!(outage_delay_ms(u32::MAX), 300_000);
    }

    #[test]
    fn retries_follow_python_ironicclient_and_honour_retry_after() {
        let policy = RetryPolicy::default();
        let status = |s| Reply::Response(Response { status: s, ..Default::default() });
        assert_eq!(policy.delay_ms(0, &status(409)), Some(2000));
        assert_eq!(policy.delay_ms(4, &status(503)), Some(2000));
        assert_eq!(policy.delay_ms(5, &status(503)), None, "6 attempts in all");
        assert_eq!(policy.delay_ms(0, &Reply::ConnectionFailed("refused".into())), Some(2000));
        assert_eq!(policy.delay_ms(0, &Reply::TimedOut), Some(2000));
        for s in [200, 400, 404, 429, 500, 502, 504] {
            assert_eq!(policy.delay_ms(0, &status(s)), None, "{s}");
        }
        let after =
            |v: &str| Reply::Response(Response { status: 503, retry_after: Some(v.into()), ..Default::default() });
        assert_eq!(policy.delay_ms(0, &after("7")), Some(7000));
        assert_eq!(policy.delay_ms(0, &after("Wed, 21 Oct 2026 07:28:00 GMT")), Some(2000));
        // A huge or absurd Retry-After is capped, never a timer that
        // overflows (and so fires at once, in a loop).
        assert_eq!(policy.delay_ms(0, &after("61")), Some(MAX_RETRY_AFTER_MS));
        assert_eq!(policy.delay_ms(0, &after("99999999999999999999999999")), Some(MAX_RETRY_AFTER_MS));
        for odd in ["-1", "1.5", "", " ", "0x10", "+3"] {
            assert_eq!(policy.delay_ms(0, &after(odd)), Some(2000), "{odd:?}");
        }
        let unusable = Reply::Unusable(Error::InvalidResponse("too large".into()));
        assert_eq!(policy.delay_ms(0, &unusable), None, "final as it is");
        assert_eq!(reply_error::<Value>(&unusable), Error::InvalidResponse("too large".into()));
        assert_eq!(RetryPolicy { max_retries: 0, interval_ms: 1 }.delay_ms(0, &status(503)), None);
    }

    #[test]
    fn a_retry_is_counted_when_it_is_due_by_the_latest_instant() {
        let policy = RetryPolicy { max_retries: 2, interval_ms: 1000 };
        let busy = Reply::Response(Response { status: 503, ..Default::default() });
        let mut retry = Retry::default();
        assert_eq!(retry.next(&policy, &busy, 10, Some(1009)), None, "after the latest: not made");
        assert_eq!(retry.made, 0);
        assert_eq!(retry.next(&policy, &busy, 10, Some(1010)), Some(1010));
        assert_eq!(retry.next(&policy, &busy, 1010, None), Some(2010));
        assert_eq!(retry.next(&policy, &busy, 2010, None), None, "spent");
        assert_eq!(retry.made, 2);
        retry.forgo();
        assert_eq!(retry.made, 1);
        let refused = Reply::Response(Response { status: 400, ..Default::default() });
        assert_eq!(Retry::default().next(&policy, &refused, 0, None), None);
    }

    #[test]
    fn a_polling_loop_holds_off_when_the_server_asks_even_for_a_request_not_retried() {
        let policy = RetryPolicy::default();
        let answer = |status, after: Option<&str>| {
            Reply::Response(Response { status, retry_after: after.map(Into::into), ..Default::default() })
        };
        assert_eq!(policy.hold_off_ms(&answer(429, Some("30"))), Some(30_000));
        assert_eq!(policy.hold_off_ms(&answer(429, None)), Some(2000));
        assert_eq!(policy.hold_off_ms(&answer(503, Some("600"))), Some(MAX_RETRY_AFTER_MS));
        assert_eq!(policy.delay_ms(0, &answer(429, Some("30"))), None, "python-ironicclient does not retry a 429");
        for s in [200, 409, 500, 502] {
            assert_eq!(policy.hold_off_ms(&answer(s, Some("30"))), None, "{s}");
        }
        assert_eq!(policy.hold_off_ms(&Reply::TimedOut), None);
    }
}
