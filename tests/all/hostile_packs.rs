//! Hostile packs written as WebAssembly text: a core module that implements
//! `gavel:grader/pack@0.1.0` by hand (its answers laid out in memory as the canonical ABI has
//! them), turned into a component against the repository's WIT by `wit-component`. Each test
//! sets what the pack says and what its `grade` does before it answers.

#![allow(dead_code)]

use std::path::Path;

/// What a hostile pack says and does.
pub struct HostilePack {
    pub name: Vec<u8>,
    pub version: Vec<u8>,
    /// `(name, description)` of each grader.
    pub functions: Vec<(Vec<u8>, Vec<u8>)>,
    /// `check-config` refuses every config with this message, when set.
    pub config_rejection: Option<Vec<u8>>,
    /// The score and rationale of every grade.
    pub score: f64,
    pub rationale: Vec<u8>,
    /// Core instances beside the pack's, each with a memory of this many 64 KiB pages that it
    /// writes to when instantiated, that is, on every call.
    pub hogs: Vec<u32>,
    /// WebAssembly instructions `grade` runs before it answers.
    pub grade_body: String,
}

impl Default for HostilePack {
    fn default() -> HostilePack {
        HostilePack {
            name: b"hostile".to_vec(),
            version: b"1.0.0".to_vec(),
            functions: vec![(b"ok".to_vec(), b"grades everything 1".to_vec())],
            config_rejection: None,
            score: 1.0,
            rationale: b"fine".to_vec(),
            hogs: Vec::new(),
            grade_body: String::new(),
        }
    }
}

/// Static data from address `BASE` on, little-endian, as the canonical ABI lays it out.
struct Image {
    bytes: Vec<u8>,
}

const BASE: u32 = 16;

impl Image {
    fn here(&self) -> u32 {
        BASE + self.bytes.len() as u32
    }

    fn align(&mut self, to: usize) {
        while !(BASE as usize + self.bytes.len()).is_multiple_of(to) {
            self.bytes.push(0);
        }
    }

    fn bytes(&mut self, data: &[u8]) -> (u32, u32) {
        let at = self.here();
        self.bytes.extend_from_slice(data);
        (at, data.len() as u32)
    }

    /// Reserves `size` zero bytes aligned to 8 and returns their address.
    fn zeroed(&mut self, size: usize) -> u32 {
        self.align(8);
        let at = self.here();
        self.bytes.resize(self.bytes.len() + size, 0);
        at
    }

    fn put_u32(&mut self, at: u32, value: u32) {
        let i = (at - BASE) as usize;
        self.bytes[i..i + 4].copy_from_slice(&value.to_le_bytes());
    }

    fn put_u8(&mut self, at: u32, value: u8) {
        self.bytes[(at - BASE) as usize] = value;
    }

    fn put_f64(&mut self, at: u32, value: f64) {
        let i = (at - BASE) as usize;
        self.bytes[i..i + 8].copy_from_slice(&value.to_le_bytes());
    }

    fn wat_string(&self) -> String {
        let mut out = String::with_capacity(self.bytes.len() * 3);
        for b in &self.bytes {
            out.push_str(&format!("\\{b:02x}"));
        }
        out
    }
}

impl HostilePack {
    /// The core module, in WebAssembly text.
    pub fn core_wat(&self) -> String {
        let mut image = Image { bytes: Vec::new() };
        let name = image.bytes(&self.name);
        let version = image.bytes(&self.version);
        let texts: Vec<((u32, u32), (u32, u32))> = self
            .functions
            .iter()
            .map(|(n, d)| (image.bytes(n), image.bytes(d)))
            .collect();
        let rationale = image.bytes(&self.rationale);
        let rejection = self.config_rejection.as_ref().map(|m| image.bytes(m));

        // list<function-info>: 24 bytes each (name, kind, description, needs-ground-truth).
        let list = image.zeroed(24 * texts.len());
        for (i, ((name_ptr, name_len), (desc_ptr, desc_len))) in texts.iter().enumerate() {
            let at = list + 24 * i as u32;
            image.put_u32(at, *name_ptr);
            image.put_u32(at + 4, *name_len);
            image.put_u32(at + 12, *desc_ptr);
            image.put_u32(at + 16, *desc_len);
        }
        // pack-info: name, version, functions.
        let info = image.zeroed(24);
        for (offset, value) in [
            name.0,
            name.1,
            version.0,
            version.1,
            list,
            texts.len() as u32,
        ]
        .into_iter()
        .enumerate()
        {
            image.put_u32(info + 4 * offset as u32, value);
        }
        // result<_, string>
        let check = image.zeroed(12);
        if let Some((ptr, len)) = rejection {
            image.put_u8(check, 1);
            image.put_u32(check + 4, ptr);
            image.put_u32(check + 8, len);
        }
        // result<grade, string>: the grade from offset 8 (score, status, rationale, options).
        let grade = image.zeroed(64);
        image.put_f64(grade + 8, self.score);
        image.put_u32(grade + 20, rationale.0);
        image.put_u32(grade + 24, rationale.1);
        // result<option<string>, string>: ok(none).
        let extract = image.zeroed(16);

        let heap = image.here().next_multiple_of(8);
        let pages = heap.div_ceil(65_536) + 1;
        let data = image.wat_string();
        let body = &self.grade_body;
        format!(
            r#"(module
  (memory (export "memory") {pages})
  (global $heap (mut i32) (i32.const {heap}))
  (func (export "cabi_realloc") (param i32 i32 i32 i32) (result i32)
    (local $at i32)
    (local.set $at
      (i32.and
        (i32.add (global.get $heap) (i32.sub (local.get 2) (i32.const 1)))
        (i32.sub (i32.const 0) (local.get 2))))
    (global.set $heap (i32.add (local.get $at) (local.get 3)))
    (if (i32.gt_u (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
      (then
        (if (i32.eq
              (memory.grow
                (i32.add (i32.const 1)
                  (i32.shr_u
                    (i32.sub (global.get $heap) (i32.mul (memory.size) (i32.const 65536)))
                    (i32.const 16))))
              (i32.const -1))
          (then unreachable))))
    (local.get $at))
  (func (export "gavel:grader/pack@0.1.0#describe") (result i32) (i32.const {info}))
  (func (export "gavel:grader/pack@0.1.0#check-config") (param i32 i32 i32 i32) (result i32)
    (i32.const {check}))
  (func (export "gavel:grader/pack@0.1.0#grade") (param i32) (result i32)
    {body}
    (i32.const {grade}))
  (func (export "gavel:grader/pack@0.1.0#extract") (param i32) (result i32) (i32.const {extract}))
  (data (i32.const {BASE}) "{data}")
)"#
        )
    }

    /// The pack as a component: the pack itself, and when there are hogs, a component around
    /// it that instantiates them beside it and re-exports its interface.
    pub fn component(&self) -> Vec<u8> {
        let pack = component_of(&self.core_wat());
        if self.hogs.is_empty() {
            return pack;
        }
        use wasm_encoder::{
            Alias, Component, ComponentAliasSection, ComponentExportKind, ComponentExportSection,
            ComponentInstanceSection, ComponentSectionId, InstanceSection, ModuleArg, RawSection,
        };
        const EXPORT: &str = "gavel:grader/pack@0.1.0";
        const TYPES: &str = "gavel:grader/types@0.1.0";
        let mut outer = Component::new();
        // The pack imports the (types-only) `types` interface: the outer component declares the
        // same import by copying the pack's sections up to its first core module, which keeps
        // every index the same, and hands the import on.
        for payload in wasmparser::Parser::new(0).parse_all(&pack) {
            use wasmparser::Payload;
            let (id, range) = match payload.expect("the pack parses") {
                Payload::Version { .. } | Payload::CustomSection(_) => continue,
                Payload::ComponentTypeSection(s) => (ComponentSectionId::Type, s.range()),
                Payload::ComponentImportSection(s) => (ComponentSectionId::Import, s.range()),
                Payload::ComponentAliasSection(s) => (ComponentSectionId::Alias, s.range()),
                _ => break,
            };
            outer.section(&RawSection {
                id: id as u8,
                data: &pack[range.start as usize..range.end as usize],
            });
        }
        outer.section(&RawSection {
            id: ComponentSectionId::Component as u8,
            data: &pack,
        });
        for pages in &self.hogs {
            let hog = wat::parse_str(format!(
                "(module (memory {pages}) (func $touch                  (memory.fill (i32.const 0) (i32.const 7) (i32.const {bytes}))) (start $touch))",
                bytes = pages * 65_536
            ))
            .expect("the hog parses");
            outer.section(&RawSection {
                id: ComponentSectionId::CoreModule as u8,
                data: &hog,
            });
        }
        let mut hogs = InstanceSection::new();
        for module in 0..self.hogs.len() as u32 {
            hogs.instantiate(module, std::iter::empty::<(&str, ModuleArg)>());
        }
        outer.section(&hogs);
        let mut instances = ComponentInstanceSection::new();
        instances.instantiate(0, [(TYPES, ComponentExportKind::Instance, 0)]);
        outer.section(&instances);
        let mut alias = ComponentAliasSection::new();
        alias.alias(Alias::InstanceExport {
            instance: 1,
            kind: ComponentExportKind::Instance,
            name: EXPORT,
        });
        outer.section(&alias);
        let mut exports = ComponentExportSection::new();
        exports.export(EXPORT, ComponentExportKind::Instance, 2, None);
        outer.section(&exports);
        outer.finish()
    }

    /// Writes the component to `dir/name.wasm` and returns its path.
    pub fn write(&self, dir: &Path, name: &str) -> std::path::PathBuf {
        let path = dir.join(format!("{name}.wasm"));
        std::fs::write(&path, self.component()).expect("write the hostile pack");
        path
    }
}

/// A core module in text form that implements the `pack-v0` world, as a component.
pub fn component_of(core_wat: &str) -> Vec<u8> {
    let wit = Path::new(env!("CARGO_MANIFEST_DIR")).join("../wit/gavel-grader-0.1.0");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(&wit).expect("the WIT parses");
    let world = resolve
        .select_world(&[package], Some("pack-v0"))
        .expect("the world exists");
    let mut module = wat::parse_str(core_wat).expect("the hostile module parses");
    wit_component::embed_component_metadata(
        &mut module,
        &resolve,
        world,
        wit_component::StringEncoding::UTF8,
    )
    .expect("the WIT embeds");
    wit_component::ComponentEncoder::default()
        .module(&module)
        .expect("the module is a pack")
        .validate(true)
        .encode()
        .expect("the component encodes")
}

/// `depth` components, each instantiating the one inside it `copies` times: `copies^depth` core
/// instances once inlined, in a file of a few hundred bytes a level.
pub fn nested_bomb(depth: usize, copies: usize) -> Vec<u8> {
    let mut wat = String::from(
        "(component (core module $m (func (export \"f\"))) (core instance (instantiate $m)))",
    );
    for _ in 0..depth {
        wat = format!(
            "(component (component $c {inner}) {instances})",
            inner = wat
                .strip_prefix("(component")
                .and_then(|w| w.strip_suffix(')'))
                .unwrap_or_default(),
            instances = "(instance (instantiate $c))".repeat(copies)
        );
    }
    wat::parse_str(&wat).expect("the nested bomb parses")
}

#[test]
fn nested_instantiations_are_counted_and_refused_before_compiling() {
    use crate::common::{Workspace, gavel_in, stderr};
    let ws = Workspace::new();
    // Eleven levels of four: 4^11 = 2^22 core instances from about 8 KB.
    let bomb = nested_bomb(11, 4);
    assert!(bomb.len() < 10_000, "{}", bomb.len());
    std::fs::write(ws.path("bomb.wasm"), &bomb).unwrap();
    let output = gavel_in(ws.dir.path(), &["inspect", "bomb.wasm"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert_eq!(
        stderr(&output).trim_end(),
        "error: pack `bomb.wasm`: cannot compile bomb.wasm: its nested components instantiate \
         4194304 core instances once inlined; the limit is 50 a component"
    );
    // Refused from its structure: nothing was compiled, so nothing was cached.
    let cached = ws.path(".cache/packs");
    let artifacts = std::fs::read_dir(&cached).map_or(0, |dir| dir.count());
    assert_eq!(artifacts, 0, "{}", cached.display());

    // Components reached through an outer alias and exported again count as well.
    let through = wat::parse_str(
        "(component \
           (component $leaf (core module $m) \
             (core instance (instantiate $m)) (core instance (instantiate $m))) \
           (component $mid \
             (alias outer 1 $leaf (component $l)) \
             (instance (instantiate $l)) (instance (instantiate $l)) (instance (instantiate $l)) \
             (export \"again\" (component $l))) \
           (instance $a (instantiate $mid)) (instance (instantiate $mid)) \
           (instance (instantiate $mid)) (instance (instantiate $mid)) \
           (instance (instantiate $mid)) (instance (instantiate $mid)) \
           (instance (instantiate $mid)) (instance (instantiate $mid)) \
           (instance (instantiate $mid)))",
    )
    .expect("the aliased bomb parses");
    std::fs::write(ws.path("through.wasm"), &through).unwrap();
    let output = gavel_in(ws.dir.path(), &["inspect", "through.wasm"]);
    assert!(
        stderr(&output).contains("instantiate 54 core instances once inlined"),
        "{}",
        stderr(&output)
    );

    // Under the bound, a nested component is compiled, and found to be no pack.
    std::fs::write(ws.path("small.wasm"), nested_bomb(2, 4)).unwrap();
    let output = gavel_in(ws.dir.path(), &["inspect", "small.wasm"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("does not export"),
        "{}",
        stderr(&output)
    );
}

/// One function with `locals` locals, each read and written around a loop, in a component.
pub fn locals_bomb(locals: usize) -> Vec<u8> {
    let mut body = String::with_capacity(locals * 64);
    for i in 1..locals {
        body.push_str(&format!(
            "(local.set {i} (i64.add (local.get {i}) (local.get {})))\n",
            i - 1
        ));
    }
    let wat = format!(
        "(component (core module (func (export \"f\") (param i64) (result i64) (local {}) \
         (loop $l {body} (br_if $l (i64.eqz (local.get {last})))) (local.get {last}))))",
        "i64 ".repeat(locals - 1),
        last = locals - 1
    );
    wat::parse_str(&wat).expect("the locals bomb parses")
}
