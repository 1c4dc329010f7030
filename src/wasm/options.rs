//! The options of the client and of each method, as declarations: serde
//! reads them from the plain data `js/index.js` makes of a caller's object
//! (own data properties only, `undefined`/`null` dropped, lists and objects
//! fresh, callbacks wrapped, the signal our own, anything else that is no
//! data a stand-in symbol), so reading never runs a caller's code.
//!
//! serde-wasm-bindgen reads a struct by asking for each declared field, so
//! it never sees an unknown key and `deny_unknown_fields` would be silent;
//! [`read`] hands serde the object's own entries instead, and names the key
//! of any value it refuses.

use std::cell::{Cell, RefCell};

use js_sys::{Array, Function, Object};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, Visitor};
use serde::Deserialize;
use serde_wasm_bindgen::Deserializer;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::AbortSignal;

use super::document::Json;
use crate::engine::{Settle, WaitOptions};
use crate::error::Error;

/// `value` (absent, or a plain object) read into `T`. `what` names the
/// object in messages ("options"), `prefix` each of its keys ("Option ").
pub fn read<T: DeserializeOwned>(value: &JsValue, what: &str, prefix: &str) -> Result<T, Error> {
    let entries = if value.is_undefined() || value.is_null() {
        Array::new()
    } else if value.is_object() && !Array::is_array(value) {
        Object::entries(value.unchecked_ref())
    } else {
        return Err(Error::InvalidArgument(format!("{what} must be an object")));
    };
    let key = RefCell::new(String::new());
    let in_value = Cell::new(false);
    let fields = Fields { entries, next: 0, value: JsValue::UNDEFINED, key: &key, in_value: &in_value };
    T::deserialize(fields).map_err(|e| {
        let key = key.borrow();
        let problem = if !in_value.get() {
            "is not known".into()
        } else {
            // serde says "invalid type: <the value>, expected <what>": only
            // the part after the last ", expected " is ours (the value may be
            // a secret).
            match e.to_string().rsplit_once(", expected ") {
                Some((_, "f64")) => "must be a number".into(),
                Some((_, expected)) => format!("must be {expected}"),
                None => "is not valid".into(),
            }
        };
        Error::InvalidArgument(format!("{prefix}{key} {problem}"))
    })
}

/// A plain object's own entries, as a serde map; the key being read, and
/// whether its value was, are left for [`read`]'s messages.
struct Fields<'a> {
    entries: Array,
    next: u32,
    value: JsValue,
    key: &'a RefCell<String>,
    in_value: &'a Cell<bool>,
}

impl<'de> de::Deserializer<'de> for Fields<'_> {
    type Error = serde_wasm_bindgen::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_map(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

impl<'de> MapAccess<'de> for Fields<'_> {
    type Error = serde_wasm_bindgen::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        if self.next >= self.entries.length() {
            return Ok(None);
        }
        let entry: Array = self.entries.get(self.next).unchecked_into();
        self.next += 1;
        let key = entry.get(0);
        self.value = entry.get(1);
        *self.key.borrow_mut() = key.as_string().unwrap_or_default();
        self.in_value.set(false);
        seed.deserialize(Deserializer::from(key)).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        self.in_value.set(true);
        seed.deserialize(Deserializer::from(std::mem::take(&mut self.value)))
    }
}

/// A JS value kept as it is (a callback js/index.js wrapped, its signal,
/// JSON data), cast to `T`.
fn js<'de, D: de::Deserializer<'de>, T: JsCast>(d: D) -> Result<Option<T>, D::Error> {
    serde_wasm_bindgen::preserve::deserialize(d).map(Some)
}

/// `wait`, as the CLI's `--wait`: false = send only, true or 0 = no limit,
/// N = seconds.
pub enum Wait {
    SendOnly,
    Seconds(f64),
}

impl<'de> Deserialize<'de> for Wait {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Wait, D::Error> {
        struct WaitVisitor;
        impl Visitor<'_> for WaitVisitor {
            type Value = Wait;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false or a timeout in seconds")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Wait, E> {
                Ok(if v { Wait::Seconds(0.0) } else { Wait::SendOnly })
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Wait, E> {
                Ok(Wait::Seconds(v))
            }
            // serde-wasm-bindgen gives a whole number as an integer.
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Wait, E> {
                Ok(Wait::Seconds(v as f64))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Wait, E> {
                Ok(Wait::Seconds(v as f64))
            }
        }
        d.deserialize_any(WaitVisitor)
    }
}

/// One string, or a list of strings (`fields`).
pub struct Strings(pub Vec<String>);

impl<'de> Deserialize<'de> for Strings {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Strings, D::Error> {
        struct StringsVisitor;
        impl<'de> Visitor<'de> for StringsVisitor {
            type Value = Strings;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string or a list of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Strings, E> {
                Ok(Strings(vec![v.to_string()]))
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, mut items: A) -> Result<Strings, A::Error> {
                let mut list = Vec::new();
                loop {
                    match items.next_element::<String>() {
                        Ok(Some(item)) => list.push(item),
                        Ok(None) => return Ok(Strings(list)),
                        Err(_) => return Err(de::Error::invalid_type(de::Unexpected::Seq, &self)),
                    }
                }
            }
        }
        d.deserialize_any(StringsVisitor)
    }
}

/// Every method's options carry the call's `signal`.
pub trait CallOptions: DeserializeOwned {
    fn signal(&self) -> Option<AbortSignal>;
}

macro_rules! call_options {
    ($($options:ty),*) => {$(
        impl CallOptions for $options {
            fn signal(&self) -> Option<AbortSignal> {
                self.signal.clone()
            }
        }
    )*};
}

call_options!(
    Provision,
    WaitForNodes,
    CreateAllocation,
    WaitForAllocation,
    GetNode,
    ListNodes,
    Microversion,
    Authenticate
);

// serde(flatten) cannot share the wait-tuning fields: it is not supported
// with deny_unknown_fields, and the values it buffers lose the JS values
// (signal, onProgress). They are repeated instead.

/// `new IronicClient(options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Client {
    pub endpoint: Option<String>,
    pub token: Option<String>,
    #[serde(default, deserialize_with = "js")]
    pub get_token: Option<Function>,
    /// `{ username, password }`, read by `client::auth`.
    #[serde(default, deserialize_with = "js")]
    pub basic_auth: Option<JsValue>,
    /// `{ type, authUrl, ... }`, read by `client::auth`.
    #[serde(default, deserialize_with = "js")]
    pub auth: Option<JsValue>,
    pub region: Option<String>,
    pub interface: Option<String>,
    pub microversion: Option<String>,
    pub max_retries: Option<f64>,
    pub retry_interval: Option<f64>,
    pub request_timeout: Option<f64>,
    pub max_response_bytes: Option<f64>,
    /// Any names, string values: read as the object's entries.
    #[serde(default, deserialize_with = "js")]
    pub headers: Option<JsValue>,
    pub user_agent: Option<String>,
}

/// `authenticate(options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Authenticate {
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
    /// A token the server refused: renew it if it is still the current one.
    pub refused: Option<String>,
}

/// `provision(nodes, action, options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Provision {
    pub wait: Option<Wait>,
    #[serde(default, deserialize_with = "js")]
    pub config_drive: Option<JsValue>,
    #[serde(default, deserialize_with = "js")]
    pub clean_steps: Option<JsValue>,
    #[serde(default, deserialize_with = "js")]
    pub deploy_steps: Option<JsValue>,
    #[serde(default, deserialize_with = "js")]
    pub service_steps: Option<JsValue>,
    pub runbook: Option<String>,
    pub rescue_password: Option<String>,
    pub disable_ramdisk: Option<bool>,
    pub poll_interval: Option<f64>,
    pub settle: Option<String>,
    pub hold_is_terminal: Option<bool>,
    pub fail_on_unexpected_state: Option<bool>,
    pub concurrency: Option<f64>,
    pub list_threshold: Option<f64>,
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
    #[serde(default, deserialize_with = "js")]
    pub on_progress: Option<Function>,
}

/// `waitForProvisionState(nodes, expectedState, options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForNodes {
    pub timeout: Option<f64>,
    pub poll_interval: Option<f64>,
    pub settle: Option<String>,
    pub hold_is_terminal: Option<bool>,
    pub fail_on_unexpected_state: Option<bool>,
    pub concurrency: Option<f64>,
    pub list_threshold: Option<f64>,
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
    #[serde(default, deserialize_with = "js")]
    pub on_progress: Option<Function>,
}

/// `createAllocation(fields, options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateAllocation {
    pub wait: Option<Wait>,
    pub poll_interval: Option<f64>,
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
    #[serde(default, deserialize_with = "js")]
    pub on_progress: Option<Function>,
}

/// `waitForAllocation(id, options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitForAllocation {
    pub timeout: Option<f64>,
    pub poll_interval: Option<f64>,
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
    #[serde(default, deserialize_with = "js")]
    pub on_progress: Option<Function>,
}

/// `getNode(id, options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetNode {
    pub fields: Option<Strings>,
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
}

/// `listNodes(options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListNodes {
    pub fields: Option<Strings>,
    pub limit: Option<f64>,
    pub provision_state: Option<String>,
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
}

/// `microversion(options)`.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Microversion {
    #[serde(default, deserialize_with = "js")]
    pub signal: Option<AbortSignal>,
}

/// The wait-tuning options `provision` and `waitForProvisionState` share.
pub struct Tuning<'a> {
    pub settle: Option<&'a str>,
    pub hold_is_terminal: Option<bool>,
    pub fail_on_unexpected_state: Option<bool>,
    pub concurrency: Option<f64>,
    pub list_threshold: Option<f64>,
}

macro_rules! tuning {
    ($($options:ty),*) => {$(
        impl $options {
            pub fn tuning(&self) -> Tuning<'_> {
                Tuning {
                    settle: self.settle.as_deref(),
                    hold_is_terminal: self.hold_is_terminal,
                    fail_on_unexpected_state: self.fail_on_unexpected_state,
                    concurrency: self.concurrency,
                    list_threshold: self.list_threshold,
                }
            }
        }
    )*};
}

tuning!(Provision, WaitForNodes);

// ---- the options as the core takes them ----------------------------------

/// The wait-tuning options shared by `provision` and the waits.
pub fn wait_options(tuning: &Tuning, base: WaitOptions) -> Result<WaitOptions, Error> {
    Ok(WaitOptions {
        settle: settle_option(tuning.settle)?,
        fail_on_unexpected_state: tuning.fail_on_unexpected_state.unwrap_or(true),
        hold_is_terminal: tuning.hold_is_terminal.unwrap_or(false),
        concurrency: whole_number(tuning.concurrency, "concurrency", base.concurrency)?,
        list_threshold: whole_number(tuning.list_threshold, "listThreshold", base.list_threshold)?,
        ..base
    })
}

pub fn settle_option(given: Option<&str>) -> Result<Settle, Error> {
    match given {
        None | Some("first-failure") => Ok(Settle::FirstFailure),
        Some("all") => Ok(Settle::All),
        Some(other) => {
            Err(Error::InvalidArgument(format!("Option settle must be 'first-failure' or 'all', got \"{other}\"")))
        }
    }
}

/// A count option: a whole number from 1.
pub fn whole_number(given: Option<f64>, key: &str, default: usize) -> Result<usize, Error> {
    match given {
        None => Ok(default),
        Some(n) if n >= 1.0 && n.fract() == 0.0 => Ok(n.min(1e6) as usize),
        Some(_) => Err(Error::InvalidArgument(format!("Option {key} must be a whole number from 1"))),
    }
}

/// createAllocation's fields (JSON data, cloned by js/index.js) under
/// Ironic's names, as the POST body, in the caller's order; `null` ones are
/// left out.
pub fn allocation_body(fields: &JsValue) -> Result<Json, Error> {
    if !fields.is_object() || Array::is_array(fields) {
        return Err(Error::InvalidArgument("allocation fields must be an object".into()));
    }
    let body = js_sys::Object::new();
    for entry in js_sys::Object::entries(fields.unchecked_ref()) {
        let entry: Array = entry.unchecked_into();
        let key = entry.get(0).as_string().unwrap_or_default();
        let field = match key.as_str() {
            "resourceClass" => "resource_class",
            "candidateNodes" => "candidate_nodes",
            "traits" | "name" | "node" | "owner" | "extra" | "uuid" => key.as_str(),
            other => return Err(Error::InvalidArgument(format!("Unknown allocation field {other}"))),
        };
        // Already JSON data of our own: js/index.js cloned it as it goes
        // on the wire (`jsonData`), the one place that checks it.
        let value = entry.get(1);
        if !value.is_undefined() && !value.is_null() {
            let _ = js_sys::Reflect::set(&body, &field.into(), &value);
        }
    }
    Ok(Json(body.into()))
}
