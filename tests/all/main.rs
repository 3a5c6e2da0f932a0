//! gavel's integration tests, in one binary so that wasmtime and gavel are linked once. Each
//! module tests one side of gavel through its library or its `gavel` binary.

mod agent_judge;
mod c_pack;
mod cli;
mod common;
mod conformance;
mod csv;
mod diff;
mod evaldeck_project;
mod evaldeck_turn_llm;
mod evaldeck_turns;
mod golden;
mod hostile;
mod hostile_cache;
mod hostile_files;
mod hostile_judge;
mod hostile_packs;
mod hostile_python;
mod interp_packs;
mod judge;
mod judge_failing;
mod letta_examples;
mod new_pack;
mod openai_server;
mod outputs;
mod packages;
mod packs;
mod python_graders;
mod python_host;
mod readme;
mod report;
mod resume;
mod retry;
mod sandbox;
