// A typical Code Mode program: shape raw records into a report.
const regions = ['north', 'south', 'east', 'west'];
const products = ['widget', 'gadget', 'doohickey', 'gizmo', 'sprocket'];
const orders = [];
for (let i = 0; i < 40; i++) {
  orders.push({
    id: 'ord-' + String(i).padStart(4, '0'),
    region: regions[i % regions.length],
    product: products[(i * 7) % products.length],
    qty: 1 + ((i * 13) % 9),
    price: Math.round((3 + ((i * 37) % 50) / 7) * 100) / 100,
    placed: new Date(Date.UTC(2026, i % 12, 1 + (i % 27))).toISOString(),
    note: i % 5 === 0 ? 'RUSH: ship by ' + (10 + (i % 20)) + 'th' : '',
  });
}

const byRegion = new Map();
const seenProducts = new Set();
for (const o of orders) {
  const total = o.qty * o.price;
  const r = byRegion.get(o.region) ?? { orders: 0, revenue: 0, products: new Set() };
  r.orders += 1;
  r.revenue += total;
  r.products.add(o.product);
  byRegion.set(o.region, r);
  seenProducts.add(o.product);
}

const rush = orders
  .filter((o) => /^RUSH/.test(o.note))
  .map((o) => ({ id: o.id, day: Number(o.note.match(/by (\d+)th/)[1]) }))
  .sort((a, b) => a.day - b.day || a.id.localeCompare(b.id));

const months = orders.reduce((acc, o) => {
  const m = o.placed.slice(0, 7);
  acc[m] = (acc[m] || 0) + o.qty;
  return acc;
}, {});

const report = [...byRegion.entries()]
  .map(([region, r]) => ({
    region,
    orders: r.orders,
    revenue: Math.round(r.revenue * 100) / 100,
    products: [...r.products].sort(),
  }))
  .sort((a, b) => b.revenue - a.revenue);

const busiest = Object.entries(months).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))[0];
return { report, rush: rush.slice(0, 3), busiest, products: seenProducts.size, total: orders.length };
