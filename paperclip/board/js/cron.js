// A routine's cron schedule in words ("Every weekday at 09:00"), in the routine's time zone;
// a schedule this cannot say simply stays as it is (shown in code).

const DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
const pad = (n) => String(n).padStart(2, "0");
const num = (f) => /^\d+$/.test(f);

function days(dow) {
  if (dow === "*") return null;
  if (dow === "1-5") return "every weekday";
  if (dow === "0,6" || dow === "6,0") return "every weekend day";
  const parts = dow.split(",");
  if (parts.every(num)) return `on ${parts.map((d) => `${DAYS[Number(d) % 7]}s`).join(" and ")}`;
  const range = dow.match(/^(\d)-(\d)$/);
  if (range) return `${DAYS[Number(range[1]) % 7]} to ${DAYS[Number(range[2]) % 7]}`;
  return null;
}

/** `cron` (five fields) in words, or null when it is not a simple one. */
export function cronWords(cron) {
  const f = String(cron || "").trim().split(/\s+/);
  if (f.length !== 5) return null;
  const [min, hour, dom, mon, dow] = f;
  const step = min.match(/^\*\/(\d+)$/);
  if (step && hour === "*" && dom === "*" && mon === "*" && dow === "*") return `Every ${step[1]} minutes`;
  if (min === "*" && hour === "*" && dom === "*" && mon === "*" && dow === "*") return "Every minute";
  if (num(min) && hour === "*" && dom === "*" && mon === "*" && dow === "*") return `Every hour at :${pad(min)}`;
  if (!num(min) || mon !== "*") return null;
  const hours = hour.split(",");
  if (!hours.every(num)) return null;
  const at = `at ${hours.map((x) => `${pad(x)}:${pad(min)}`).join(" and ")}`;
  if (dom === "*") {
    const d = days(dow);
    if (dow === "*") return `Every day ${at}`;
    return d ? `${d[0].toUpperCase()}${d.slice(1)} ${at}` : null;
  }
  if (num(dom) && dow === "*") return `On day ${dom} of every month ${at}`;
  return null;
}
