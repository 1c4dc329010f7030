//! The core's documents in the wasm: values `JSON.parse` made. The core
//! reads them member by member with `get` (an own-property check and a
//! `Reflect.get` each), only the members a decision needs; what goes back
//! to the caller is the same object.

use js_sys::{Array, Object, JSON};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::document::Document;

#[wasm_bindgen]
extern "C" {
    /// `Reflect.get` of an object's own member.
    #[wasm_bindgen(js_namespace = Reflect)]
    fn get(target: &JsValue, key: &JsValue) -> JsValue;
}

/// A JSON value of the runtime's.
#[derive(Clone, Debug)]
pub struct Json(pub JsValue);

impl Document for Json {
    fn parse(text: &str) -> Option<Json> {
        JSON::parse(text).ok().map(Json)
    }

    fn python_type(&self) -> &'static str {
        let v = &self.0;
        if v.is_string() {
            "str"
        } else if v.is_null() || v.is_undefined() {
            "NoneType"
        } else if v.as_bool().is_some() {
            "bool"
        } else if let Some(n) = v.as_f64() {
            // JSON.parse keeps no trace of `1.0`; a whole number reads as int.
            if n.fract() == 0.0 {
                "int"
            } else {
                "float"
            }
        } else if Array::is_array(v) {
            "list"
        } else if v.is_object() {
            "dict"
        } else {
            // No JSON value: a function, a symbol (js/index.js's stand-in
            // for what is no data).
            "object"
        }
    }

    fn truthy(&self) -> bool {
        match self.python_type() {
            // JS calls every object true; Python calls empty ones false.
            "dict" => Object::keys(self.0.unchecked_ref::<Object>()).length() > 0,
            "list" => self.0.unchecked_ref::<Array>().length() > 0,
            _ => self.0.is_truthy(),
        }
    }

    fn as_string(&self) -> Option<String> {
        self.0.as_string()
    }

    fn items(&self) -> Option<Vec<Json>> {
        let array = self.0.dyn_ref::<Array>()?;
        Some(array.iter().map(Json).collect())
    }

    fn get(&self, key: &str) -> Option<Json> {
        if !self.0.is_object() || Array::is_array(&self.0) {
            return None;
        }
        // One JS string for both lookups: every field of every entry comes
        // here. Read with no handler for a throw: a plain object's own data
        // member cannot throw.
        let key = JsValue::from_str(key);
        Object::has_own(self.0.unchecked_ref::<Object>(), &key).then(|| Json(get(&self.0, &key)))
    }

    fn as_u64(&self) -> Option<u64> {
        let n = self.0.as_f64()?;
        (n >= 0.0 && n.fract() == 0.0 && n <= (1u64 << 53) as f64).then_some(n as u64)
    }

    fn as_f64(&self) -> Option<f64> {
        self.0.as_f64()
    }

    fn as_bool(&self) -> Option<bool> {
        self.0.as_bool()
    }

    fn keys(&self) -> Vec<String> {
        match self.python_type() {
            "dict" => Object::keys(self.0.unchecked_ref::<Object>()).iter().filter_map(|k| k.as_string()).collect(),
            _ => Vec::new(),
        }
    }

    fn to_json(&self) -> String {
        JSON::stringify(&self.0).ok().and_then(|s| s.as_string()).unwrap_or_else(|| "null".into())
    }
}
