// Promise combinators and async iteration settle through microtasks alone.
const delay = (v) => Promise.resolve().then(() => v);
const all = await Promise.all([1, 2, 3].map(delay));
const settled = await Promise.allSettled([delay('ok'), Promise.reject(new Error('bad'))]);
const any = await Promise.any([Promise.reject(1), delay('first')]);
const race = await Promise.race([delay('a'), new Promise(() => {})]);
async function* gen() { for (const x of all) yield x * 10; }
const seen = [];
for await (const v of gen()) seen.push(v);
return { all, settled: settled.map((s) => s.status), any, race, seen };
