// Reads WARC files with warcio.js (the Webrecorder project's reader, from
// npm), an implementation independent of the Go library that wrote them,
// and checks each record's WARC-Block-Digest against its block.
// Usage: WARCIO=<path to node_modules/warcio> node warcio-check.cjs FILE...
// Prints one JSON line: {"records":N,"types":{...},"bad":[...]}.
const { WARCParser } = require(process.env.WARCIO);
const fs = require("fs");
const crypto = require("crypto");
const zlib = require("zlib");

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
function base32(buf) {
  let bits = 0, value = 0, out = "";
  for (const b of buf) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += alphabet[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += alphabet[(value << (5 - bits)) & 31];
  return out;
}

function digestOf(label, block) {
  const [algo, want] = label.split(":");
  const name = { sha1: "sha1", sha256: "sha256", "sha-1": "sha1", "sha-256": "sha256" }[algo.toLowerCase()];
  if (!name) return { ok: false, why: "unknown algorithm " + algo };
  const sum = crypto.createHash(name).update(block).digest();
  const ok = want.toUpperCase() === base32(sum) || want.toLowerCase() === sum.toString("hex");
  return { ok, why: ok ? "" : "digest differs" };
}

async function main() {
  const out = { records: 0, types: {}, bad: [] };
  for (const file of process.argv.slice(2)) {
    const parser = new WARCParser(fs.createReadStream(file), { parseHttp: false });
    for await (const record of parser) {
      const block = Buffer.from(await record.readFully(false));
      out.records++;
      const type = record.warcType + (record.warcHeader("WARC-Profile") ? " " + record.warcHeader("WARC-Profile") : "");
      out.types[type] = (out.types[type] || 0) + 1;
      const len = Number(record.warcHeader("Content-Length"));
      if (len !== block.length) out.bad.push(`${file}: ${record.warcTargetURI}: Content-Length ${len}, block ${block.length}`);
      const d = record.warcHeader("WARC-Block-Digest");
      if (!d) out.bad.push(`${file}: ${record.warcType} ${record.warcTargetURI}: no WARC-Block-Digest`);
      else {
        const r = digestOf(d, block);
        if (!r.ok) out.bad.push(`${file}: ${record.warcType} ${record.warcTargetURI}: ${r.why}`);
      }
    }
  }
  console.log(JSON.stringify(out));
}
main().catch((e) => { console.error(e); process.exit(1); });
