// A release build's step (Trunk.toml's post_build hook): gives the functions a wasm imports from
// wasm-bindgen's glue short names, in the wasm and in the glue alike. wasm-bindgen names each one after
// its JavaScript and a 16-digit hash (`__wbg_getContext_d93f904b714852ae`): two hundred of them are
// kilobytes of digits that no compressor can shrink, downloaded twice by every player. Binaryen's own
// pass renames only the imports of emscripten's modules, so this one does it for the glue's module.
//
// Usage: node minify-imports.mjs app_bg.wasm app.js — both rewritten in place.
import { readFileSync, writeFileSync } from 'node:fs';
import { basename } from 'node:path';

const [wasmPath, gluePath] = process.argv.slice(2);
const wasm = readFileSync(wasmPath);
let glue = readFileSync(gluePath, 'utf8');
// The module the glue provides: named after the wasm, as wasm-bindgen names it.
const glueModule = `./${basename(wasmPath).replace(/-[0-9a-f]+_bg\.wasm$/, '_bg.wasm').replace(/\.wasm$/, '.js')}`;

function readLeb(bytes, at) {
  let value = 0, shift = 0, byte;
  do {
    byte = bytes[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
}

function leb(value) {
  const out = [];
  do {
    let byte = value % 128;
    value = Math.floor(value / 128);
    if (value > 0) byte |= 0x80;
    out.push(byte);
  } while (value > 0);
  return Buffer.from(out);
}

const name = text => Buffer.concat([leb(Buffer.byteLength(text)), Buffer.from(text)]);

// Where an import's description ends (func, table, memory, global or tag).
function skipDescription(bytes, at) {
  const kind = bytes[at++];
  const limits = at => {
    const flags = bytes[at++];
    at = readLeb(bytes, at)[1];
    return flags & 1 ? readLeb(bytes, at)[1] : at;
  };
  switch (kind) {
    case 0x00: return readLeb(bytes, at)[1];
    case 0x01: return limits(at + 1);
    case 0x02: return limits(at);
    case 0x03: return at + 2;
    case 0x04: return readLeb(bytes, at + 1)[1];
    default: throw new Error(`unknown import kind ${kind} at byte ${at - 1}`);
  }
}

// a…z, A…Z, then two letters: never a JavaScript keyword, never a clash between themselves.
const letters = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const shortName = i => (i < letters.length ? letters[i] : shortName(Math.floor(i / letters.length) - 1) + letters[i % letters.length]);

const parts = [wasm.subarray(0, 8)];
let at = 8, renamed = 0;
while (at < wasm.length) {
  const id = wasm[at];
  const [size, contentAt] = readLeb(wasm, at + 1);
  const end = contentAt + size;
  if (id !== 2) {
    parts.push(wasm.subarray(at, end));
  } else {
    let [count, p] = readLeb(wasm, contentAt);
    const imports = [leb(count)];
    for (let i = 0; i < count; i++) {
      const [moduleLength, moduleAt] = readLeb(wasm, p);
      const module = wasm.toString('utf8', moduleAt, moduleAt + moduleLength);
      const [fieldLength, fieldAt] = readLeb(wasm, moduleAt + moduleLength);
      const field = wasm.toString('utf8', fieldAt, fieldAt + fieldLength);
      const descriptionAt = fieldAt + fieldLength;
      p = skipDescription(wasm, descriptionAt);
      let newField = field;
      if (module === glueModule) {
        newField = shortName(renamed++);
        // The glue names each import once, as a key of the object it hands the wasm.
        const key = new RegExp(`(?<![\\w$])${field.replace(/\$/g, '\\$')}(?=:)`, 'g');
        const found = glue.match(key)?.length ?? 0;
        if (found !== 1) throw new Error(`${field} is named ${found} times in ${gluePath}, not once`);
        glue = glue.replace(key, newField);
      }
      imports.push(name(module), name(newField), wasm.subarray(descriptionAt, p));
    }
    const content = Buffer.concat(imports);
    parts.push(Buffer.from([2]), leb(content.length), content);
  }
  at = end;
}
if (renamed === 0) throw new Error(`no import of ${glueModule} in ${wasmPath}`);
writeFileSync(wasmPath, Buffer.concat(parts));
writeFileSync(gluePath, glue);
console.log(`${basename(wasmPath)}: ${renamed} imports renamed`);
