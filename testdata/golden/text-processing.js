// Strings, regular expressions with named groups, and Intl-free formatting.
const log = `2026-11-01 12:00:01 INFO  user=ada action=login
2026-11-01 12:00:05 WARN  user=bob action=retry attempts=3
2026-11-01 12:01:10 ERROR user=ada action=upload size=1048576
2026-11-01 12:02:00 INFO  user=cy  action=logout`;
const re = /^(?<date>\S+) (?<time>\S+) (?<level>\w+)\s+(?<rest>.*)$/;
const entries = log.split('\n').map((line) => {
  const { groups } = line.match(re);
  const fields = Object.fromEntries(groups.rest.trim().split(/\s+/).map((kv) => kv.split('=')));
  return { level: groups.level, ...fields };
});
const byUser = {};
for (const e of entries) (byUser[e.user] ??= []).push(e.action);
return {
  levels: [...new Set(entries.map((e) => e.level))].sort(),
  byUser,
  errors: entries.filter((e) => e.level === 'ERROR').map((e) => `${e.user}:${Number(e.size) / 1024}KiB`),
  title: 'hello world'.replace(/\b\w/g, (c) => c.toUpperCase()),
};
