// Data and baseline for sluice_parquet_bench: writes the benchmark's tables
// with DuckDB and times DuckDB's single-thread scan of the same columns.
//
//   node parquet_bench.mjs OUT_DIR RUNS
//
// Tables (each snappy and zstd):
//   numeric_CODEC.parquet  16 float32 columns, 2,000,000 rows (DuckDB's default
//                          row groups: 17 of 122,880 rows)
//   text_CODEC.parquet     one string column, 1-4 KiB per row, 60,000 rows in 8
//                          row groups of 7,500 (~19 MB each decoded): a corpus
//                          of many groups, as a large one written with DuckDB's
//                          default 122,880 rows a group is, so that reading the
//                          table decodes groups as it goes, in order or shuffled
// Prints one JSON object: { "NAME": [seconds of each scan run], ... }, each
// scan being `SET threads = 1; SELECT sum(...)` (numeric) or
// `SELECT sum(length(s))` (text) over the file.
import { DuckDBInstance } from '@duckdb/node-api';
import fs from 'node:fs';
import path from 'node:path';

const [out, runsArg] = process.argv.slice(2);
const runs = Number(runsArg || 5);
fs.mkdirSync(out, { recursive: true });
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run('SET threads = 1');

const columns = Array.from({ length: 16 }, (_, k) => `c${k}`);
const numeric = columns.map((c, k) => `(sin(i * ${k + 1} * 0.001) * 100 + ${k})::FLOAT AS ${c}`).join(', ');
// Text that compresses like prose does, not like a repeated pattern.
const text = `(SELECT string_agg(md5((i * 131 + j)::VARCHAR) || ' ' || (i * j % 977)::VARCHAR, ' ')
               FROM range((i % 70) + 22) t(j)) AS s`;
const tables = {};
for (const codec of ['snappy', 'zstd']) {
  const n = path.join(out, `numeric_${codec}.parquet`);
  const t = path.join(out, `text_${codec}.parquet`);
  if (!fs.existsSync(n)) {
    await con.run(`COPY (SELECT ${numeric} FROM range(2000000) r(i)) TO '${n}' (FORMAT parquet, COMPRESSION ${codec})`);
  }
  if (!fs.existsSync(t)) {
    await con.run(`COPY (SELECT ${text} FROM range(60000) r(i)) TO '${t}' (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 7500)`);
  }
  tables[`numeric_${codec}`] = `SELECT ${columns.map((c) => `sum(${c})`).join(' + ')} FROM read_parquet('${n}')`;
  tables[`text_${codec}`] = `SELECT sum(length(s)) FROM read_parquet('${t}')`;
}
const seconds = {};
for (const [name, sql] of Object.entries(tables)) {
  await con.runAndReadAll(sql);  // warm: the file in the page cache, like Sluice's runs
  seconds[name] = [];
  for (let r = 0; r < runs; ++r) {
    const start = process.hrtime.bigint();
    await con.runAndReadAll(sql);
    seconds[name].push(Number(process.hrtime.bigint() - start) / 1e9);
  }
}
console.log(JSON.stringify(seconds));
