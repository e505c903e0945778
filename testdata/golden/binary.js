// Typed arrays, DataView and ArrayBuffer are available for binary work.
const buf = new ArrayBuffer(8);
const view = new DataView(buf);
view.setUint32(0, 0xdeadbeef);
view.setFloat32(4, 1.5, true);
const bytes = new Uint8Array(buf);
const hex = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');
const f64 = Float64Array.from([1, 2, 3]).map((x) => x * 1.5);
return { hex, sum: f64.reduce((a, b) => a + b), slice: Array.from(bytes.subarray(0, 2)), bigint: String(new BigInt64Array([-5n])[0]) };
