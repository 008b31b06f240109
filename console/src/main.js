// The batchlane console: one small Preact app (htm templates, no build-time JSX); the page view loads lazily.
import { h, render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { ApiError, api, bearer, estimate as runEstimate, getConfig, s3Url, setConfig, signedIn, upload } from "./api.js";
import { resume, signIn } from "./auth.js";
import "./style.css";

const html = htm.bind(h);
const usd = (v) => (v == null ? "–" : `$${Number(v).toFixed(4)}`);
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
const duration = (s) => (s == null ? "unknown" : s < 90 ? `${s} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`);

function useRoute() {
  const [route, setRoute] = useState(location.hash.slice(1) || "/new");
  useEffect(() => {
    const on = () => setRoute(location.hash.slice(1) || "/new");
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route.split("/").filter(Boolean);
}

// A request bound to one control: disabled while in flight, its error shown beside it as a sentence.
function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const inFlight = useRef(false); // synchronous: two clicks in one tick come before the re-render that disables
  const run = async (fn) => {
    if (inFlight.current) return undefined;
    inFlight.current = true; setBusy(true); setError(null);
    try { return await fn(); } catch (e) { setError(e.message); return undefined; } finally { inFlight.current = false; setBusy(false); }
  };
  return { busy, error, run };
}

const Err = ({ error }) => (error ? html`<p class="error" role="alert">${error}</p>` : null);

// Poll while visible; slower while the tab is hidden.
function usePoll(fn, deps, fastMs = 2000) {
  useEffect(() => {
    let stop = false, timer = null;
    const tick = async () => {
      try { await fn(); } catch { /* shown by the view */ }
      if (!stop) timer = setTimeout(tick, document.hidden ? fastMs * 8 : fastMs);
    };
    tick();
    return () => { stop = true; clearTimeout(timer); };
  }, deps);
}

function SignIn({ onDone }) {
  const [name, setName] = useState("");
  const cognito = getConfig().mode === "cognito";
  return html`<main><h1>Sign in to batchlane</h1>
    <form onSubmit=${async (e) => { e.preventDefault(); const who = await signIn(name.trim()); if (who) onDone(who); }}>
      ${cognito ? html`<p>You will be sent to the sign-in page of your organisation.</p>` : html`
        <label for="user">User name</label>
        <input id="user" autocomplete="username" value=${name} onInput=${(e) => setName(e.target.value)} required />`}
      <button type="submit">Sign in</button>
    </form></main>`;
}

// What New conversion accepts (domain/file_types.py): the service tells the type from the bytes.
const ACCEPTED = ".pdf,.png,.jpg,.jpeg,.webp,.tif,.tiff,.docx,.pptx,.xlsx,.xlsm,.html,.htm,.xhtml,.epub,.odt";

export const localFiles = new Map(); // fileId → File: the page view draws from it right after upload

function NewConversion() {
  const [file, setFile] = useState(null);
  const [opts, setOpts] = useState({ bulk: false, deadline: "", modelId: "", callbackUrl: "", docx: false, html: false, json: false });
  const [registered, setRegistered] = useState(null);
  const [estimate, setEstimate] = useState(null);
  const [estProgress, setEstProgress] = useState("");
  const est = useAction(), conv = useAction();
  const options = () => {
    const o = {};
    if (opts.bulk) o.batchLane = true; // small jobs opt in to the batch lane; large ones go there anyway
    if (opts.deadline) o.deadline = new Date(opts.deadline).toISOString();
    if (opts.modelId) o.modelId = opts.modelId;
    if (opts.callbackUrl) o.callbackUrl = opts.callbackUrl;
    const formats = ["docx", "html", "json"].filter((f) => opts[f]); // renderings beside the Markdown (docs/formats.md)
    if (formats.length) o.conversionFormats = Object.fromEntries([["md", true], ...formats.map((f) => [f, true])]);
    return o;
  };
  const ensureUploaded = async () => {
    if (registered && registered.file === file) return registered.fileId;
    const r = await upload(file);
    localFiles.set(r.fileId, file);
    setRegistered({ file, fileId: r.fileId });
    return r.fileId;
  };
  const doEstimate = () => est.run(async () => {
    const id = await ensureUploaded();
    setEstProgress("");
    setEstimate(await runEstimate(`/api/v1/files/${id}/convert?dry_run=true`, { options: options() }, setEstProgress));
  });
  const doConvert = () => conv.run(async () => {
    const id = await ensureUploaded();
    const started = await api("POST", `/api/v1/files/${id}/convert`, { options: options() });
    location.hash = `/job/${started.jobId}`;
  });
  const set = (k) => (e) => setOpts({ ...opts, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  return html`<main><h1>New conversion</h1>
    <div class="drop" onDragOver=${(e) => e.preventDefault()} onDrop=${(e) => { e.preventDefault(); setFile(e.dataTransfer.files[0]); setEstimate(null); }}>
      <label for="pdf">PDF file, or a scan or picture (PNG, JPEG, WebP, TIFF), Word, PowerPoint, Excel, HTML, EPUB or ODT</label>
      <input id="pdf" type="file" accept=${ACCEPTED} onChange=${(e) => { setFile(e.target.files[0] || null); setEstimate(null); }} />
      <p class="hint">or drop a file here (born-digital documents are converted with no model call: $0)</p>
    </div>
    <fieldset><legend>Options</legend>
      <label><input type="checkbox" checked=${opts.bulk} onChange=${set("bulk")} /> Bulk: half price in the batch lane, even for a small PDF (up to a day)</label>
      <label for="deadline">Deadline (optional)</label><input id="deadline" type="datetime-local" value=${opts.deadline} onInput=${set("deadline")} />
      <label for="model">Model id (optional)</label><input id="model" value=${opts.modelId} onInput=${set("modelId")} />
      <label for="callback">Callback URL (optional)</label><input id="callback" type="url" value=${opts.callbackUrl} onInput=${set("callbackUrl")} />
    </fieldset>
    <fieldset><legend>Also write (beside the Markdown)</legend>
      <label><input type="checkbox" checked=${opts.docx} onChange=${set("docx")} /> Word (.docx)</label>
      <label><input type="checkbox" checked=${opts.html} onChange=${set("html")} /> HTML</label>
      <label><input type="checkbox" checked=${opts.json} onChange=${set("json")} /> Blocks (JSON lines)</label>
    </fieldset>
    <div class="actions">
      <button disabled=${!file || est.busy} onClick=${doEstimate}>${est.busy ? "Estimating…" : "Estimate"}</button>
      ${est.busy && estProgress && html`<span role="status" data-testid="est-progress">${estProgress}</span>`}
      <button disabled=${!file || conv.busy} onClick=${doConvert}>${conv.busy ? "Starting…" : "Convert"}</button>
    </div>
    <${Err} error=${est.error || conv.error} />
    ${estimate && html`<section aria-label="Estimate" class="card"><h2>Estimate (nothing started yet)</h2><dl>
      <dt>Pages</dt><dd data-testid="est-pages">${estimate.lane.name === "converter"
        ? `${estimate.pages.total ?? "counted at conversion"} (a page is ${estimate.pages.pageIs})`
        : `${estimate.pages.total} (${estimate.pages.blank} blank, ${estimate.pages.scans} scans)`}</dd>
      <dt>Lane</dt><dd data-testid="est-lane">${estimate.lane.name === "batch" ? "batch (half price)" : estimate.lane.name === "converter" ? "converter (no model call)" : "on-demand"}: ${estimate.lane.reason}</dd>
      <dt>Cost</dt><dd data-testid="est-cost">${usd(estimate.estimate.costUsd)}</dd>
      <dt>Cost if all on-demand</dt><dd>${usd(estimate.estimate.onDemandUsd)}</dd>
      <dt>Turnaround</dt><dd>${estimate.turnaround.expected}</dd></dl></section>`}
  </main>`;
}

const STATUSES = ["", "splitting", "pending", "processing", "waiting_batch", "paused_budget", "assembling", "completed", "failed", "cancelled"];

function Jobs() {
  const [status, setStatus] = useState("");
  const [files, setFiles] = useState(null);
  const [error, setError] = useState(null);
  usePoll(async () => {
    try { setFiles((await api("GET", `/api/v1/files${status ? `?status=${status}` : ""}`)).files); setError(null); } catch (e) { setError(e.message); }
  }, [status], 3000);
  return html`<main><h1>Jobs</h1>
    <label for="status">Status</label>
    <select id="status" value=${status} onChange=${(e) => setStatus(e.target.value)}>${STATUSES.map((s) => html`<option value=${s}>${s || "any"}</option>`)}</select>
    <${Err} error=${error} />
    <table><caption>Your conversions, newest first</caption>
      <thead><tr><th scope="col">File</th><th scope="col">Status</th><th scope="col">Pages</th><th scope="col">Lane</th><th scope="col">Cost so far</th><th scope="col">Saving</th><th scope="col">ETA</th><th scope="col">Created</th></tr></thead>
      <tbody>${(files || []).filter((f) => f.conversion).map((f) => { const c = f.conversion; return html`<tr>
        <td><a href=${`#/job/${c.jobId}`}>${f.name}</a></td><td>${c.status}</td><td>${c.pages.done} / ${c.pages.total ?? "?"}</td>
        <td>${c.batch ? "batch" : c.batchWaiting ? "batch (pool)" : "on-demand"}</td><td>${usd(c.live.costSoFarUsd)}</td>
        <td>${usd(c.live.savingUsd)}</td><td>${duration(c.live.eta.seconds)}</td><td>${when(c.createdAt)}</td></tr>`; })}</tbody>
    </table></main>`;
}

function nextStep(j) {
  const hours = j.live.batchTimeoutHours;
  if (j.status === "waiting_batch") {
    if (j.batch && j.batch.submittedAt) return `Waiting for the Bedrock batch job, submitted ${when(j.batch.submittedAt)}, ${hours} h limit; the pages it misses go on-demand after.`;
    return "Waiting in the batch pool for other pages to share a Bedrock batch job; Process now sends it on-demand.";
  }
  return {
    splitting: "Splitting the PDF into chunks.", pending: "Queued for on-demand conversion.", processing: "Converting on-demand.",
    paused_budget: "Paused: this month's budget is spent; it resumes when the budget allows.", assembling: "Assembling the Markdown.",
    completed: "Done: the Markdown is ready.", failed: "Failed.", cancelled: "Cancelled.",
  }[j.status] || j.status;
}

function Job({ id }) {
  const [job, setJob] = useState(null);
  const [failed, setFailed] = useState([]);
  const [error, setError] = useState(null);
  const [download, setDownload] = useState(null);
  const act = useAction();
  usePoll(async () => {
    try {
      const j = await api("GET", `/api/v1/jobs/${id}`);
      setJob(j); setError(null);
      setFailed(j.pages.failed ? (await api("GET", `/api/v1/jobs/${id}/pages?status=failed`)).pages : []);
      if (j.status === "completed") setDownload(await api("GET", `/api/v1/jobs/${id}/markdown`));
    } catch (e) { setError(e.message); }
  }, [id], 2000);
  if (!job) return html`<main><h1>Job</h1><${Err} error=${error} /><p>Loading…</p></main>`;
  const finished = ["completed", "failed", "cancelled"].includes(job.status);
  const post = (path, body) => act.run(async () => { await api("POST", path, body); setJob(await api("GET", `/api/v1/jobs/${id}`)); });
  return html`<main><h1>Job ${id.slice(0, 8)}</h1>
    <p><progress aria-label="Pages converted" max=${job.pages.total || 1} value=${job.pages.done}></progress> ${job.pages.done} of ${job.pages.total ?? "?"} pages</p>
    <p data-testid="status">Status: <strong>${job.status}</strong> (${job.phase})</p>
    <p class="next">${nextStep(job)}</p>
    <dl><dt>Cost so far</dt><dd data-testid="cost">${usd(job.live.costSoFarUsd)}</dd><dt>All on-demand would be</dt><dd>${usd(job.live.onDemandUsd)}</dd>
      <dt>Saving</dt><dd>${usd(job.live.savingUsd)} (${job.live.savingPercent} %)</dd><dt>ETA</dt><dd>${finished ? "finished" : duration(job.live.eta.seconds)}</dd>
      ${job.costUsd != null && html`<dt>Final cost</dt><dd>${usd(job.costUsd)}</dd>`}</dl>
    <div class="actions">
      <button disabled=${finished || act.busy} onClick=${() => post(`/api/v1/files/${job.fileId}/cancel`, { jobId: id })}>Cancel</button>
      <button disabled=${!job.batchWaiting || act.busy} onClick=${() => post(`/api/v1/files/${job.fileId}/process-now`, { jobId: id })}>Process now</button>
      <button disabled=${!job.pages.failed || act.busy} onClick=${() => post(`/api/v1/jobs/${id}/retry`, {})}>Retry failed pages</button>
      ${download && html`<a class="button" href=${s3Url(download.url)} download=${download.fileName}>Download Markdown</a>`}
      ${job.pages.total && html`<a class="button" href=${`#/page/${id}/1`}>Page view</a>`}
    </div>
    <${Err} error=${act.error || error} />
    ${failed.length > 0 && html`<section aria-label="Failed pages"><h2>Failed pages</h2><ul>${failed.map((p) => html`<li>Page ${p.page}: ${p.reason} (${p.attempts} attempt${p.attempts === 1 ? "" : "s"}, ${p.lane === "batch" ? "batch lane" : "on-demand"})</li>`)}</ul></section>`}
  </main>`;
}

function PageView({ id, page }) {
  const ref = useRef(null);
  const [mod, setMod] = useState(null);
  useEffect(() => { import("./pageview.js").then(setMod); }, []);
  useEffect(() => { if (mod && ref.current) mod.mount(ref.current, { jobId: id, page: Number(page), localFiles }); }, [mod, id, page]);
  return html`<main><h1>Page ${page}</h1><div ref=${ref}><p>Loading the page view…</p></div></main>`;
}

function Folders() {
  const [form, setForm] = useState({ folder: "s3://", include: "*.pdf, *.docx, *.pptx, *.xlsx, *.html, *.epub, *.odt", exclude: "", layout: "alongside" });
  const [dry, setDry] = useState(null);
  const [dryProgress, setDryProgress] = useState("");
  const [jobs, setJobs] = useState([]);
  const dr = useAction(), start = useAction();
  const spec = () => ({ input: { folder: form.folder, include: form.include.split(",").map((s) => s.trim()).filter(Boolean), exclude: form.exclude.split(",").map((s) => s.trim()).filter(Boolean) }, output: { layout: form.layout } });
  usePoll(async () => setJobs((await api("GET", "/api/v1/folder-jobs")).folderJobs), [], 4000);
  const set = (k) => (e) => { setForm({ ...form, [k]: e.target.value }); setDry(null); };
  return html`<main><h1>Folder jobs</h1>
    <fieldset><legend>Convert every PDF and document under a folder (add *.png, *.tiff … for scans)</legend>
      <label for="folder">Folder (s3://bucket/prefix/)</label><input id="folder" value=${form.folder} onInput=${set("folder")} />
      <label for="include">Include (comma separated globs)</label><input id="include" value=${form.include} onInput=${set("include")} />
      <label for="exclude">Exclude</label><input id="exclude" value=${form.exclude} onInput=${set("exclude")} />
      <label for="layout">Layout</label><select id="layout" value=${form.layout} onChange=${set("layout")}>${["alongside", "mirror", "flat"].map((l) => html`<option>${l}</option>`)}</select>
    </fieldset>
    <div class="actions">
      <button disabled=${dr.busy} onClick=${() => dr.run(async () => { setDryProgress(""); setDry(await runEstimate("/api/v1/folder-jobs?dry_run=true", spec(), setDryProgress)); })}>${dr.busy ? "Estimating…" : "Dry run"}</button>
      ${dr.busy && dryProgress && html`<span role="status" data-testid="dry-progress">${dryProgress}</span>`}
      <button disabled=${!dry || start.busy} onClick=${() => start.run(async () => { const j = await api("POST", "/api/v1/folder-jobs", spec()); location.hash = `/folder/${j.id}`; })}>Start</button>
    </div>
    <${Err} error=${dr.error || start.error} />
    ${dry && html`<section class="card" aria-label="Dry run"><h2>Dry run</h2><pre tabindex="0">${JSON.stringify(dry.files || dry, null, 1)}</pre></section>`}
    <h2>Your folder jobs</h2><ul>${jobs.map((j) => html`<li><a href=${`#/folder/${j.id}`}>${j.name || j.id}</a>: ${j.status}</li>`)}</ul>
  </main>`;
}

function Folder({ id }) {
  const [job, setJob] = useState(null);
  const [files, setFiles] = useState([]);
  const [report, setReport] = useState(null);
  const act = useAction();
  usePoll(async () => { setJob(await api("GET", `/api/v1/folder-jobs/${id}`)); setFiles((await api("GET", `/api/v1/folder-jobs/${id}/files`)).files); }, [id], 3000);
  if (!job) return html`<main><h1>Folder job</h1><${Err} error=${act.error} /></main>`;
  const errorIds = [...new Set(files.filter((f) => f.errorId).map((f) => f.errorId))];
  return html`<main><h1>Folder job ${job.name || id}</h1>
    <p data-testid="folder-status">Status: <strong>${job.status}</strong>; throughput ${job.throughputPagesPerMinute ?? "–"} pages/min; ETA ${duration(job.etaSeconds)}</p>
    ${job.error && html`<p class="error" role="alert">The folder job stopped: ${job.error.id}: ${job.error.message}</p>`}
    <dl>${Object.entries(job.files).map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>
    <div class="actions">
      ${errorIds.map((e) => html`<button disabled=${act.busy} onClick=${() => act.run(() => api("POST", `/api/v1/folder-jobs/${id}/retry`, { errorIds: [e] }))}>Retry ${e}</button>`)}
      <button disabled=${act.busy} onClick=${() => act.run(() => api("POST", `/api/v1/folder-jobs/${id}/cancel`))}>Cancel</button>
      <button disabled=${act.busy} onClick=${() => act.run(async () => setReport(await reportText(id)))}>Report</button>
    </div>
    <${Err} error=${act.error} />
    <table><caption>Files</caption><thead><tr><th scope="col">File</th><th scope="col">Status</th><th scope="col">Error</th></tr></thead>
      <tbody>${files.map((f) => html`<tr><td>${f.key}</td><td>${f.status}</td><td>${f.errorId || ""} ${f.errorMessage || ""}</td></tr>`)}</tbody></table>
    ${report && html`<pre aria-label="Report" tabindex="0">${report}</pre>`}
  </main>`;
}

async function reportText(id) {
  const r = await fetch(`/api/v1/folder-jobs/${id}/report`, { headers: { Authorization: bearer() } });
  if (!r.ok) throw new ApiError(r.status, null);
  return r.text();
}

function Budget() {
  const [b, setB] = useState(null);
  const [error, setError] = useState(null);
  usePoll(async () => { try { setB(await api("GET", "/api/v1/budget")); } catch (e) { setError(e.message); } }, [], 5000);
  return html`<main><h1>Budget</h1><${Err} error=${error} />
    ${b && html`<dl data-testid="budget">${Object.entries(b).map(([k, v]) => html`<dt>${k}</dt><dd>${typeof v === "object" ? JSON.stringify(v) : String(v)}</dd>`)}</dl>`}</main>`;
}

function App() {
  const [user, setUser] = useState(null);
  const route = useRoute();
  useEffect(() => { resume().then((who) => who && setUser(who)); }, []);
  if (!user || !signedIn()) return html`<${SignIn} onDone=${setUser} />`;
  const [view, a, b] = route;
  const body = view === "jobs" ? html`<${Jobs} />` : view === "job" ? html`<${Job} id=${a} />` : view === "page" ? html`<${PageView} id=${a} page=${b} />`
    : view === "folders" ? html`<${Folders} />` : view === "folder" ? html`<${Folder} id=${a} />` : view === "budget" ? html`<${Budget} />` : html`<${NewConversion} />`;
  return html`<header><nav aria-label="Main"><a href="#/new">New conversion</a><a href="#/jobs">Jobs</a><a href="#/folders">Folder jobs</a><a href="#/budget">Budget</a></nav><span>Signed in as ${user}</span></header>${body}`;
}

fetch("/console-config.json").then((r) => (r.ok ? r.json() : { mode: "local" })).catch(() => ({ mode: "local" }))
  .then((c) => { setConfig(c); render(html`<${App} />`, document.getElementById("app")); });
