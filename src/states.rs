//! Ironic's provision and allocation states (`ironic/common/states.py`),
//! what a node wait watches ([`Watched`]: the provision state, the power
//! state or the conductor's lock), and python-ironicclient's action table
//! (`ironicclient/v1/utils.py`), each action with the field its wait
//! watches.
//!
//! States stay strings: the server is the authority and may grow new ones,
//! and the decision table compares them as-is (case-sensitive), as
//! python-ironicclient does.

use crate::error::Error;

/// Every provision state Ironic's state machine knows, in `states.py` order.
pub const PROVISION_STATES: [&str; 32] = [
    "enroll",
    "verifying",
    "manageable",
    "available",
    "active",
    "wait call-back",
    "deploying",
    "deploy failed",
    "deploy complete",
    "deploy hold",
    "deleting",
    "deleted",
    "cleaning",
    "clean wait",
    "clean failed",
    "clean hold",
    "error",
    "inspecting",
    "inspect failed",
    "inspect wait",
    "adopting",
    "adopt failed",
    "rescue",
    "rescue failed",
    "rescue wait",
    "rescuing",
    "unrescue failed",
    "unrescuing",
    "servicing",
    "service wait",
    "service failed",
    "service hold",
];

/// States in which a node rests without a target (`STABLE_STATES`).
pub const STABLE_STATES: [&str; 6] = ["enroll", "manageable", "available", "active", "error", "rescue"];

/// The failure states Ironic has: `error` and the `* failed` ones
/// (`FAILURE_STATES`, without `error`).
pub const FAILURE_STATES: [&str; 8] = [
    "error",
    "deploy failed",
    "clean failed",
    "inspect failed",
    "adopt failed",
    "rescue failed",
    "unrescue failed",
    "service failed",
];

/// States where Ironic parks a node until someone sends `unhold`.
pub const HOLD_STATES: [&str; 3] = ["deploy hold", "clean hold", "service hold"];

/// Allocation states: `allocating` is the initial one.
pub const ALLOCATION_STATES: [&str; 3] = ["allocating", "active", "error"];

/// The ending of a failure state's name, with its space.
pub const FAILURE_SUFFIX: &str = " failed";

/// python-ironicclient's failure rule, to the letter: `error`, or any state
/// ending in " failed" (with the space), known to Ironic or not.
pub fn is_failure_state(state: &str) -> bool {
    state == "error" || state.ends_with(FAILURE_SUFFIX)
}

pub fn is_hold_state(state: &str) -> bool {
    HOLD_STATES.contains(&state)
}

/// What a node wait watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Watched {
    /// `provision_state`: python-ironicclient's decision table.
    ProvisionState,
    /// `power_state`, until a power action is over ([`crate::verdict::judge_power`]).
    PowerState,
    /// `reservation`, until the conductor's lock is released.
    Reservation,
}

impl Watched {
    /// The node fields its checks read beyond the provision state's
    /// ([`crate::ironic::NODE_WAIT_FIELDS`]).
    pub fn fields(self) -> &'static str {
        match self {
            Watched::ProvisionState => "",
            Watched::PowerState => "power_state,target_power_state",
            Watched::Reservation => "reservation",
        }
    }
}

/// Poll interval of long-running actions, in seconds.
pub const LONG_ACTION_POLL_INTERVAL_SECS: u32 = 10;
/// Poll interval of short actions, in seconds.
pub const SHORT_ACTION_POLL_INTERVAL_SECS: u32 = 2;

/// One provision action: what is sent and what to wait for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// The name the caller used (`deploy` stays `deploy`).
    pub name: &'static str,
    /// The `target` sent in `PUT /v1/nodes/{id}/states/provision`.
    pub target: &'static str,
    /// The state `--wait` waits for, with its poll interval in seconds;
    /// `None` where python-ironicclient offers no `--wait`.
    pub wait: Option<(&'static str, u32)>,
    /// What its wait watches: the provision state, or for a power action
    /// (`PUT /v1/nodes/{id}/states/power`) the power state.
    pub watched: Watched,
    /// The states Ironic takes the node through on its way to the expected
    /// one, in order (a state may come twice: deploying, wait call-back,
    /// deploying), for a progress indicator; the wait does not depend on it.
    pub via: &'static [&'static str],
    /// The option Ironic requires with it (`cleanSteps`, unless a runbook
    /// is given; `serviceSteps`, likewise; `rescuePassword`).
    pub needs: Option<&'static str>,
    /// python-ironicclient's words for a power action (`node power off
    /// --soft` is `soft off`).
    pub words: Option<&'static str>,
}

const fn waits(name: &'static str, target: &'static str, expected: &'static str, interval: u32) -> Action {
    let wait = Some((expected, interval));
    Action { name, target, wait, watched: Watched::ProvisionState, via: &[], needs: None, words: None }
}

const fn no_wait(name: &'static str) -> Action {
    Action { name, target: name, wait: None, watched: Watched::ProvisionState, via: &[], needs: None, words: None }
}

const fn power(name: &'static str, words: &'static str, target: &'static str, expected: &'static str) -> Action {
    let wait = Some((expected, SHORT_ACTION_POLL_INTERVAL_SECS));
    Action { name, target, wait, watched: Watched::PowerState, via: &[], needs: None, words: Some(words) }
}

impl Action {
    const fn via(self, via: &'static [&'static str]) -> Action {
        Action { via, ..self }
    }

    const fn needs(self, option: &'static str) -> Action {
        Action { needs: Some(option), ..self }
    }
}

const DEPLOYING: &[&str] = &["deploying", "wait call-back", "deploying"];
const UNDEPLOYING: &[&str] = &["deleting", "cleaning", "clean wait"];

/// The power actions, by openstacksdk's names (`reboot`) with Ironic's
/// targets (`rebooting`); each waits for the power state it ends in.
pub const POWER_ACTIONS: [Action; 5] = [
    power("power on", "on", "power on", "power on"),
    power("power off", "off", "power off", "power off"),
    power("reboot", "reboot", "rebooting", "power on"),
    power("soft power off", "soft off", "soft power off", "power off"),
    power("soft reboot", "soft reboot", "soft rebooting", "power on"),
];

/// The action table. `deploy`/`undeploy` are OSC's names for the `active`
/// and `deleted` targets; `abort` and `unhold` have no `--wait`.
pub const ACTIONS: [Action; 15] = [
    waits("active", "active", "active", LONG_ACTION_POLL_INTERVAL_SECS).via(DEPLOYING),
    waits("deploy", "active", "active", LONG_ACTION_POLL_INTERVAL_SECS).via(DEPLOYING),
    waits("deleted", "deleted", "available", LONG_ACTION_POLL_INTERVAL_SECS).via(UNDEPLOYING),
    waits("undeploy", "deleted", "available", LONG_ACTION_POLL_INTERVAL_SECS).via(UNDEPLOYING),
    waits("rebuild", "rebuild", "active", LONG_ACTION_POLL_INTERVAL_SECS).via(DEPLOYING),
    waits("inspect", "inspect", "manageable", SHORT_ACTION_POLL_INTERVAL_SECS).via(&["inspecting", "inspect wait"]),
    waits("provide", "provide", "available", LONG_ACTION_POLL_INTERVAL_SECS).via(&["cleaning", "clean wait"]),
    waits("manage", "manage", "manageable", SHORT_ACTION_POLL_INTERVAL_SECS).via(&["verifying"]),
    waits("clean", "clean", "manageable", LONG_ACTION_POLL_INTERVAL_SECS)
        .via(&["cleaning", "clean wait"])
        .needs("cleanSteps"),
    waits("adopt", "adopt", "active", SHORT_ACTION_POLL_INTERVAL_SECS).via(&["adopting"]),
    waits("rescue", "rescue", "rescue", LONG_ACTION_POLL_INTERVAL_SECS)
        .via(&["rescuing", "rescue wait"])
        .needs("rescuePassword"),
    waits("unrescue", "unrescue", "active", LONG_ACTION_POLL_INTERVAL_SECS).via(&["unrescuing"]),
    waits("service", "service", "active", LONG_ACTION_POLL_INTERVAL_SECS)
        .via(&["servicing", "service wait"])
        .needs("serviceSteps"),
    no_wait("abort"),
    no_wait("unhold"),
];

/// The values of a node's `fault` (Ironic's `ironic.common.faults`), which
/// the `fault` scope filter takes.
pub const FAULTS: [&str; 4] = ["power failure", "clean failure", "rescue abort failure", "service failure"];

impl Action {
    /// Looks an action up by name (exact, lower-case, as Ironic spells it).
    pub fn named(name: &str) -> Result<&'static Action, Error> {
        ACTIONS.iter().find(|a| a.name == name).ok_or_else(|| Error::UnknownAction(name.to_string()))
    }

    /// Looks a power action up by its name or Ironic's target.
    pub fn power(name: &str) -> Result<&'static Action, Error> {
        POWER_ACTIONS.iter().find(|a| a.name == name || a.target == name).ok_or_else(|| {
            Error::InvalidArgument(format!(
                "Unknown power action \"{name}\": power on, power off, reboot, soft power off or soft reboot"
            ))
        })
    }

    /// The expected state and poll interval (seconds), or the error the CLI
    /// gives by refusing `--wait` for this action.
    pub fn wait(&self) -> Result<(&'static str, u32), Error> {
        self.wait.ok_or(Error::WaitNotSupported(self.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_actions_way_is_of_provision_states_and_what_it_needs_is_required() {
        use crate::ironic::requests::{provision, ProvisionArgs};
        for a in &ACTIONS {
            assert!(a.via.iter().all(|s| PROVISION_STATES.contains(s)), "{}", a.name);
            assert_eq!(a.via.is_empty(), a.wait.is_none(), "{}", a.name);
            let refused = provision::<serde_json::Value>("n1", a, &ProvisionArgs::default());
            assert_eq!(refused.is_err(), a.needs.is_some(), "{}", a.name);
        }
    }

    #[test]
    fn tables_are_consistent() {
        for s in STABLE_STATES.iter().chain(&FAILURE_STATES).chain(&HOLD_STATES) {
            assert!(PROVISION_STATES.contains(s), "{s}");
        }
        for s in FAILURE_STATES {
            assert!(is_failure_state(s));
        }
        assert!(is_failure_state("error"));
        assert!(is_failure_state("something new failed"));
        assert!(!is_failure_state("failed"), "the rule needs the leading space");
        assert!(!is_failure_state("Deploy Failed "));
    }

    #[test]
    fn action_table_matches_python_ironicclient() {
        let expect = [
            ("active", "active", "active", 10),
            ("deploy", "active", "active", 10),
            ("deleted", "deleted", "available", 10),
            ("undeploy", "deleted", "available", 10),
            ("rebuild", "rebuild", "active", 10),
            ("inspect", "inspect", "manageable", 2),
            ("provide", "provide", "available", 10),
            ("manage", "manage", "manageable", 2),
            ("clean", "clean", "manageable", 10),
            ("adopt", "adopt", "active", 2),
            ("rescue", "rescue", "rescue", 10),
            ("unrescue", "unrescue", "active", 10),
            ("service", "service", "active", 10),
        ];
        for (name, target, expected, interval) in expect {
            let a = Action::named(name).unwrap();
            assert_eq!((a.target, a.wait().unwrap()), (target, (expected, interval)), "{name}");
        }
        assert_eq!(ACTIONS.len(), expect.len() + 2);
    }

    #[test]
    fn abort_and_unhold_are_sent_but_not_waited_on() {
        for name in ["abort", "unhold"] {
            let a = Action::named(name).unwrap();
            assert_eq!(a.target, name);
            let e = a.wait().unwrap_err();
            assert_eq!(e, Error::WaitNotSupported(name));
            assert_eq!(e.to_string(), format!("Action {name} cannot be waited on: it has no expected state"));
        }
    }

    #[test]
    fn unknown_actions_are_refused() {
        assert_eq!(Action::named("Deploy"), Err(Error::UnknownAction("Deploy".into())));
        assert_eq!(Action::named("hold").unwrap_err().to_string(), "Unknown provision action: hold");
    }
}
