// Parquet files from independent writers, and what DuckDB reads back from
// them, for tests/io/parquet/parquet_oracle_test.cpp.
//
//   node oracle.mjs OUT_DIR     (with @duckdb/node-api, parquet-wasm and
//                                apache-arrow installed from tests/npm)
//
// Writes OUT_DIR/NAME.parquet and OUT_DIR/NAME.csv (DuckDB's reading of it,
// one column per Parquet column, rendered as the test compares them), and
// OUT_DIR/manifest.txt: "NAME EXPECTED" per line, EXPECTED naming the CSV.
// DuckDB does not read Hadoop's LZ4 codec: those files are compared with
// DuckDB's reading of the same table written uncompressed.
import { DuckDBInstance } from '@duckdb/node-api';
import * as arrow from 'apache-arrow';
import * as pq from 'parquet-wasm/node';
import fs from 'node:fs';
import path from 'node:path';

const out = process.argv[2];
fs.mkdirSync(out, { recursive: true });
const names = [];

const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run('SET threads = 1');

// DuckDB: every type it writes that Sluice reads, nulls and lists included.
await con.run(`CREATE TABLE t AS SELECT
  i::INTEGER AS i,
  (i * 1000003 - 2500000000)::BIGINT AS b,
  (i / 7.0)::FLOAT AS f,
  (i * 3.25 - 1000)::DOUBLE AS d,
  CASE WHEN i % 11 = 0 THEN NULL WHEN i % 17 = 0 THEN ''
       ELSE 'row ' || i || repeat('x', (i % 37)::INTEGER) || CASE WHEN i % 13 = 0 THEN ', "q"' ELSE '' END END AS s,
  i % 3 = 0 AS flag,
  (i % 30000 - 15000)::SMALLINT AS small,
  (i % 256 - 128)::TINYINT AS tiny,
  (i % 256)::UTINYINT AS u,
  make_timestamp(1577836800000000 + i * 1234567) AS ts,
  DATE '2000-01-01' + i::INTEGER AS dt,
  (i * 1.25 - 300)::DECIMAL(9,2) AS dec,
  (i * 12345.6789)::DECIMAL(18,4) AS dec18,
  CAST(((i - 2500)::HUGEINT * 98765432109876543 + i)::VARCHAR || '.' || lpad((i * 7919 % 100000)::VARCHAR, 5, '0')
       AS DECIMAL(38,5)) AS dec38,
  CASE WHEN i % 5 = 0 THEN NULL ELSE range(i % 4)::INTEGER[] END AS l,
  (CASE WHEN i % 7 = 0 THEN NULL ELSE i * 2 END)::INTEGER AS n,
  md5(i::VARCHAR)::UUID AS uid
FROM range(5000) r(i)`);

// Decimals as their exact text (Sluice's float64 must be the double nearest
// it); a null string as <null>, told apart from an empty one.
const render = {
  f: 'CAST(f AS DOUBLE)', d: 'd', s: "coalesce(s, '<null>')",
  ts: 'epoch_us(ts)', dt: "dt - DATE '1970-01-01'", l: "array_to_string(l, ';')",
  uid: "replace(CAST(uid AS VARCHAR), '-', '')", flag: 'flag',
};

async function expect(name, columns, same_as = null) {
  if (same_as) {
    names.push(`${name} ${same_as}`);
    return;
  }
  const file = path.join(out, name + '.parquet');
  const select = columns.map((c) => `${render[c] ?? `CAST(${c} AS VARCHAR)`} AS ${c}`).join(', ');
  await con.run(`COPY (SELECT ${select} FROM read_parquet('${file}')) TO '${path.join(out, name + '.csv')}' (HEADER)`);
  names.push(`${name} ${name}`);
}

const duckColumns = ['i', 'b', 'f', 'd', 's', 'flag', 'small', 'tiny', 'u', 'ts', 'dt', 'dec', 'dec18', 'dec38', 'l', 'n',
  'uid'];
for (const codec of ['uncompressed', 'snappy', 'gzip', 'zstd', 'lz4', 'brotli']) {
  for (const version of ['V1', 'V2']) {
    const name = `duckdb_${codec}_${version}`;
    await con.run(`COPY t TO '${path.join(out, name + '.parquet')}'
                   (FORMAT parquet, COMPRESSION ${codec}, ROW_GROUP_SIZE 1024, PARQUET_VERSION ${version})`);
    await expect(name, duckColumns);
  }
}

// arrow-rs (parquet-wasm): each codec, and each encoding on the columns it fits.
const n = 3000;
const ints = Int32Array.from({ length: n }, (_, i) => (i * 7919) % 100003 - 50000);
const longs = BigInt64Array.from({ length: n }, (_, i) => BigInt(i) * 1000000007n - 3000000000000n);
const floats = Float32Array.from({ length: n }, (_, i) => Math.fround(Math.sin(i) * 1000));
const doubles = Float64Array.from({ length: n }, (_, i) => Math.cos(i) * 1e6);
const strings = Array.from({ length: n }, (_, i) => (i % 9 === 0 ? null : i % 13 === 0 ? '' : `prefix-${Math.floor(i / 10)}-${'é'.repeat(i % 5)}${i}`));
const lists = Array.from({ length: n }, (_, i) => (i % 6 === 0 ? null : Array.from({ length: i % 5 }, (_, k) => i + k)));
const table = arrow.tableFromArrays({ ints, longs, floats, doubles });
const withMore = new arrow.Table({
  ...Object.fromEntries(table.schema.fields.map((f) => [f.name, table.getChild(f.name)])),
  strings: arrow.vectorFromArray(strings, new arrow.Utf8()),
  lists: arrow.vectorFromArray(lists, new arrow.List(new arrow.Field('item', new arrow.Int32(), true))),
  bools: arrow.vectorFromArray(Array.from({ length: n }, (_, i) => (i % 4 === 0 ? null : i % 3 === 0)), new arrow.Bool()),
});
const ipc = arrow.tableToIPC(withMore, 'stream');
const wasmColumns = ['ints', 'longs', 'floats', 'doubles', 'strings', 'lists', 'bools'];
render.floats = 'CAST(floats AS DOUBLE)';
render.doubles = 'doubles';
render.lists = "array_to_string(lists, ';')";
render.bools = 'bools';
render.strings = "coalesce(strings, '<null>')";

function write(name, props) {
  // writeParquet takes the table it is given: a fresh one each time.
  fs.writeFileSync(path.join(out, name + '.parquet'), pq.writeParquet(pq.Table.fromIPCStream(ipc), props.build()));
}
const base = () => new pq.WriterPropertiesBuilder().setMaxRowGroupSize(700).setDataPageSizeLimit(2048);
const codecs = { none: pq.Compression.UNCOMPRESSED, snappy: pq.Compression.SNAPPY, gzip: pq.Compression.GZIP,
  zstd: pq.Compression.ZSTD, lz4_raw: pq.Compression.LZ4_RAW, lz4: pq.Compression.LZ4, brotli: pq.Compression.BROTLI };
for (const [codec, value] of Object.entries(codecs)) {
  for (const [version, v] of [['v1', pq.WriterVersion.V1], ['v2', pq.WriterVersion.V2]]) {
    const name = `arrowrs_${codec}_${version}`;
    write(name, base().setCompression(value).setWriterVersion(v));
    await expect(name, wasmColumns, codec === 'lz4' ? `arrowrs_none_${version}` : null);
  }
}
const E = pq.Encoding;
const encodings = {
  plain: { ints: E.PLAIN, longs: E.PLAIN, floats: E.PLAIN, doubles: E.PLAIN, strings: E.PLAIN, lists: E.PLAIN, bools: E.PLAIN },
  delta: { ints: E.DELTA_BINARY_PACKED, longs: E.DELTA_BINARY_PACKED, strings: E.DELTA_LENGTH_BYTE_ARRAY,
           lists: E.DELTA_BINARY_PACKED },
  delta_bytes: { strings: E.DELTA_BYTE_ARRAY },
  split: { floats: E.BYTE_STREAM_SPLIT, doubles: E.BYTE_STREAM_SPLIT },  // DuckDB reads it on these only
  rle: { bools: E.RLE },
};
for (const [label, columns] of Object.entries(encodings)) {
  for (const [version, v] of [['v1', pq.WriterVersion.V1], ['v2', pq.WriterVersion.V2]]) {
    let props = base().setCompression(pq.Compression.SNAPPY).setWriterVersion(v).setDictionaryEnabled(false);
    for (const [column, encoding] of Object.entries(columns)) props = props.setColumnEncoding(column, encoding);
    const name = `arrowrs_${label}_${version}`;
    try {
      write(name, props);
    } catch (e) {
      if (label === 'rle' && version === 'v1') continue;  // RLE booleans need v2
      throw e;
    }
    await expect(name, wasmColumns);
  }
}

// Shapes Sluice refuses (parquet_oracle_test.cpp reads them by name, not
// through the manifest): structs as list elements, of two fields and of one,
// and a struct's field beside a column whose own name is that dotted path.
await con.run(`COPY (SELECT i::BIGINT AS id, [{'y': i, 'z': -i}, {'y': i + 1, 'z': -i - 1}] AS pairs,
                 [{'y': i}] AS singles, {'a': i} AS st, (i * 2)::BIGINT AS "st.a"
               FROM range(10) r(i)) TO '${path.join(out, 'refused_shapes.parquet')}' (FORMAT parquet)`);

fs.writeFileSync(path.join(out, 'manifest.txt'), names.join('\n') + '\n');
console.log(`wrote ${names.length} files to ${out}`);
