#!/bin/sh
# Regenerates bindings/pack_v0.{h,c} from wit/grader.wit with wit-bindgen's C generator. Only
# needed when the WIT changes; the generated files are checked in so that building a pack needs
# no wit-bindgen. Needs wit-bindgen-cli 0.61.1: cargo install --locked wit-bindgen-cli@0.61.1
set -eu
cd "$(dirname "$0")"
wit-bindgen c wit --world pack-v0 --no-object-file --out-dir bindings
