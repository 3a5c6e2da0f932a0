//! Arbitrary bytes as a recorded trajectory: conversion never panics in any format, detection
//! agrees with conversion, and whatever converts serialises.

#![no_main]

use gavel::input::trajectory::{self, Format};
use libfuzzer_sys::fuzz_target;
use serde_json::value::RawValue;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        return;
    };
    let detected = trajectory::detect(raw);
    let auto = trajectory::convert(raw, None);
    match detected {
        Some(format) => assert_eq!(auto, trajectory::convert(raw, Some(format))),
        None => assert!(auto.is_err()),
    }
    for format in Format::ALL {
        if let Ok(converted) = trajectory::convert(raw, Some(format)) {
            assert_eq!(converted.format, format);
            assert!(serde_json::to_string(&converted).is_ok());
        }
    }
});
