//! A grader's process as an instance of its own (see [`super::process`]): the call state's side
//! of [`Spawn`], which makes the process's store and instance the way a call's are made.

use std::time::Instant;

use wasmtime::Engine;

use super::call::{self, CallFailure};
use super::engine::{CallGrants, CallState};
use super::process::{CHILD, Ended, Exit, Processes, Reach, Spawn, Start};

impl Spawn for CallState {
    fn reach(&self) -> Option<&Reach<CallState>> {
        self.processes()
    }

    fn deadline(&self) -> Instant {
        CallState::deadline(self)
    }

    fn working_folder(&self) -> Option<String> {
        CallState::working_folder(self)
    }

    fn run_child(engine: &Engine, child: &Processes<CallState>, start: Start<'_>) -> Ended {
        let grants = CallGrants {
            access: Some(start.access),
            network: None,
            packages: start.packages,
            processes: Some(child),
            stdio: Some(start.stdio),
        };
        let limits = start.limits;
        let not_started = |e: wasmtime::Error| Ended {
            result: Exit::NotStarted(format!("{e:#}")),
            fuel_used: 0,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
        let mut store = match call::new_store(engine, limits, grants) {
            Ok(store) => store,
            Err(e) => return not_started(e),
        };
        let instance =
            match call::arm(&mut store, limits).and_then(|()| child.pre.instantiate(&mut store)) {
                Ok(instance) => instance,
                Err(e) => return not_started(e),
            };
        let result = (|| {
            let interface = instance
                .get_export_index(&mut store, None, CHILD)
                .ok_or_else(|| wasmtime::format_err!("the interpreter exports no {CHILD}"))?;
            let main = instance
                .get_export_index(&mut store, Some(&interface), "main")
                .ok_or_else(|| wasmtime::format_err!("the interpreter's {CHILD} has no `main`"))?;
            let main = instance.get_typed_func::<(&[String], &str), (i32,)>(&mut store, main)?;
            Ok(main.call(&mut store, (start.argv, start.cwd))?.0)
        })();
        let fuel_used = limits.fuel - store.get_fuel().unwrap_or(0).min(limits.fuel);
        let (stdout, stderr) = store.data().output();
        let result = match result.map_err(|e| call::classify(&e)) {
            Ok(code) | Err(CallFailure::Exited(code)) => Exit::Code(code),
            Err(CallFailure::Deadline) => Exit::Deadline,
            Err(CallFailure::Fuel) => Exit::Fuel,
            Err(other) => Exit::Stopped(other.to_string()),
        };
        Ended {
            result,
            fuel_used,
            stdout,
            stderr,
        }
    }
}
