// The batchlane console: one small Preact app (htm templates, no build-time JSX); the page view loads lazily.
import { h, render } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { ApiError, api, bearer, estimate as runEstimate, getConfig, s3Url, setConfig, signedIn, upload } from "./api.js";
import { resume, signIn, signOut } from "./auth.js";
import "./style.css";

const html = htm.bind(h);
const usd = (v) => (v == null ? "–" : `$${Number(v).toFixed(4)}`);
// A saving against all on-demand, or a loss said as one (docs/operations.md "Estimates, holds, savings and pauses").
const saving = (live) => (Number(live.savingUsd) < 0
  ? html`<span class="loss" data-testid="loss">loss of ${usd(-Number(live.savingUsd))} (${-Number(live.savingPercent)} % more than on-demand)</span>`
  : html`${usd(live.savingUsd)} (${live.savingPercent} %)`);
const usd2 = (v) => (v == null ? "–" : `$${Number(v).toFixed(2)}`);
const when = (iso) => (iso ? new Date(iso).toLocaleString() : "–");
const duration = (s) => (s == null ? "unknown" : s < 90 ? `${s} s` : s < 5400 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`);
const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

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
  return { busy, error, run, setError };
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

// Each view starts with its heading; after a route change focus moves there (screen readers announce the new view).
const Title = ({ children }) => html`<h1 tabindex="-1" id="view-title">${children}</h1>`;

function SignIn({ onDone }) {
  const [name, setName] = useState("");
  const field = useRef(null);
  const cognito = getConfig().mode === "cognito";
  useEffect(() => { if (field.current) field.current.focus(); }, []);
  return html`<main id="main"><h1>Sign in to batchlane</h1>
    <form onSubmit=${async (e) => { e.preventDefault(); const who = await signIn(name.trim()); if (who) onDone(who); }}>
      ${cognito ? html`<p>You will be sent to the sign-in page of your organisation.</p>` : html`
        <label for="user">User name</label>
        <input id="user" ref=${field} autocomplete="username" value=${name} onInput=${(e) => setName(e.target.value)} required />`}
      <button type="submit">Sign in</button>
    </form></main>`;
}

// What New conversion accepts (domain/file_types.py): the service tells the type from the bytes.
const ACCEPTED = ".pdf,.png,.jpg,.jpeg,.webp,.tif,.tiff,.docx,.pptx,.xlsx,.xlsm,.html,.htm,.xhtml,.epub,.odt";

export const localFiles = new Map(); // fileId → File: the page view draws from it right after upload

const EMPTY_FILE = "The file is empty: it has no bytes to convert. Check that it was saved or downloaded completely.";

function NewConversion() {
  const [file, setFile] = useState(null);
  const [opts, setOpts] = useState({ bulk: false, describeFigures: false, deadline: "", modelId: "", callbackUrl: "", docx: false, html: false, json: false });
  const [registered, setRegistered] = useState(null);
  const [estimate, setEstimate] = useState(null);
  const [estProgress, setEstProgress] = useState("");
  const est = useAction(), conv = useAction();
  const options = () => {
    const o = {};
    if (opts.bulk) o.batchLane = true; // small jobs opt in to the batch lane; large ones go there anyway
    if (opts.describeFigures) o.describeFigures = true; // a born-digital document's pictures, described by Claude (docs/formats.md)
    if (opts.deadline) o.deadline = new Date(opts.deadline).toISOString();
    if (opts.modelId) o.modelId = opts.modelId;
    if (opts.callbackUrl) o.callbackUrl = opts.callbackUrl;
    const formats = ["docx", "html", "json"].filter((f) => opts[f]); // renderings beside the Markdown (docs/formats.md)
    if (formats.length) o.conversionFormats = Object.fromEntries([["md", true], ...formats.map((f) => [f, true])]);
    return o;
  };
  const ensureUploaded = async () => {
    if (file.size === 0) throw new Error(EMPTY_FILE); // said before anything is uploaded, as the CLI says it
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
  const choose = (chosen) => { setFile(chosen || null); setEstimate(null); est.setError(null); conv.setError(null); };
  const set = (k) => (e) => setOpts({ ...opts, [k]: e.target.type === "checkbox" ? e.target.checked : e.target.value });
  return html`<${Title}>New conversion<//>
    <div class="drop" onDragOver=${(e) => e.preventDefault()} onDrop=${(e) => { e.preventDefault(); choose(e.dataTransfer.files[0]); }}>
      <label for="pdf">PDF file, or a scan or picture (PNG, JPEG, WebP, TIFF), Word, PowerPoint, Excel, HTML, EPUB or ODT</label>
      <input id="pdf" type="file" accept=${ACCEPTED} onChange=${(e) => choose(e.target.files[0])} />
      <p class="hint">or drop a file here (born-digital documents are converted with no model call: $0)</p>
    </div>
    <fieldset><legend>Options</legend>
      <label><input type="checkbox" checked=${opts.bulk} onChange=${set("bulk")} /> Bulk: half price in the batch lane, even for a small PDF (up to a day)</label>
      <label><input type="checkbox" checked=${opts.describeFigures} onChange=${set("describeFigures")} /> Describe pictures: Claude writes each picture's alt text (Word, PowerPoint, Excel, HTML, EPUB, ODT; billed per picture)</label>
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
      <dt>Pages</dt><dd data-testid="est-pages">${estimate.pages.pageIs
        ? `${estimate.pages.total ?? "counted at conversion"} (a page is ${estimate.pages.pageIs})`
        : `${estimate.pages.total} (${estimate.pages.blank} blank, ${estimate.pages.scans} scans)`}</dd>
      ${estimate.figures && html`<dt>Pictures</dt><dd data-testid="est-figures">${estimate.figures.pictures === null
        ? "counted at conversion"
        : `${estimate.figures.toDescribe} to describe, ${usd(estimate.figures.costUsd)} in all${estimate.figures.toDescribe ? ` (${estimate.figures.perPicture.map((p) => `${p.width}×${p.height} px ${usd(p.costUsd)}`).join(", ")}${estimate.figures.toDescribe > estimate.figures.listed ? ", …" : ""})` : ""}`}</dd>`}
      <dt>Lane</dt><dd data-testid="est-lane">${estimate.lane.name === "batch" ? "batch (half price)" : estimate.lane.name === "converter" ? "converter (no model call)" : "on-demand"}: ${estimate.lane.reason}</dd>
      <dt>Cost</dt><dd data-testid="est-cost">${estimate.estimate.lane === "depends" ? estimate.estimate.condition : usd(estimate.estimate.costUsd)}</dd>
      <dt>Cost if all on-demand</dt><dd>${usd(estimate.estimate.onDemandUsd)}</dd>
      ${estimate.estimate.worstCaseUsd != null && html`<dt>Worst case</dt><dd data-testid="est-worst">${usd(estimate.estimate.worstCaseUsd)}</dd>`}
      ${estimate.estimate.holdBasis != null && html`<dt>Held at a time</dt><dd data-testid="est-hold">${usd(estimate.estimate.holdUsd)} of your budget (${estimate.estimate.holdBasis})</dd>`}
      ${estimate.estimate.refusal
        ? html`<dt>Budget</dt><dd class="loss" data-testid="est-refusal">${estimate.estimate.refusal}</dd>`
        : estimate.estimate.roomLeftUsd != null && html`<dt>Budget left</dt><dd>${usd(estimate.estimate.roomLeftUsd)} of ${usd(estimate.estimate.budgetUsdPerMonth)} this month</dd>`}
      <dt>Turnaround</dt><dd>${estimate.turnaround.expected}</dd></dl></section>`}`;
}

const STATUSES = ["", "splitting", "pending", "processing", "waiting_batch", "paused_budget", "assembling", "completed", "failed", "cancelled"];

// The lane that served the job, not the one it asked for: a bulk job the pool let go (pool_too_small) ran on-demand (issue 38.3).
function laneWords(c) {
  if (c.batchWaiting) return "batch (pool)";
  const served = c.pages.batchServed || 0;
  if (served > 0) return served < c.pages.done ? "batch and on-demand" : "batch";
  if (c.batch && c.batch.state !== "closed") return "batch";
  return c.batch && c.batch.reason ? `on-demand (${c.batch.reason.replace(/_/g, " ")})` : "on-demand";
}

function statusWords(c) {
  if (c.status === "completed" && c.pages.failed) return `completed, ${plural(c.pages.failed, "page")} failed`;
  return c.status.replace("_", " ");
}

function Jobs() {
  const [status, setStatus] = useState("");
  const [files, setFiles] = useState(null);
  const [error, setError] = useState(null);
  usePoll(async () => {
    try { setFiles((await api("GET", `/api/v1/files${status ? `?status=${status}` : ""}`)).files); setError(null); } catch (e) { setError(e.message); }
  }, [status], 3000);
  const rows = (files || []).filter((f) => f.conversion);
  return html`<${Title}>Jobs<//>
    <label for="status">Status</label>
    <select id="status" value=${status} onChange=${(e) => setStatus(e.target.value)}>${STATUSES.map((s) => html`<option value=${s}>${s || "any"}</option>`)}</select>
    <${Err} error=${error} />
    ${files && rows.length === 0 ? html`<p class="empty">${status ? `No conversion is ${status.replace("_", " ")}.` : html`No conversions yet. <a href="#/new">Convert a PDF</a>.`}</p>` : html`
    <table class="stack" role="table"><caption>Your conversions, newest first</caption>
      <thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">File</th><th scope="col" role="columnheader">Status</th><th scope="col" role="columnheader">Pages</th><th scope="col" role="columnheader">Lane</th><th scope="col" role="columnheader">Cost so far</th><th scope="col" role="columnheader">Saving</th><th scope="col" role="columnheader">ETA</th><th scope="col" role="columnheader">Created</th></tr></thead>
      <tbody role="rowgroup">${rows.map((f) => { const c = f.conversion; return html`<tr role="row">
        <td role="cell" data-label="File"><a href=${`#/job/${c.jobId}`}>${f.name}</a></td><td role="cell" data-label="Status">${statusWords(c)}</td><td role="cell" data-label="Pages">${c.pages.done} / ${c.pages.total ?? "?"}</td>
        <td role="cell" data-label="Lane">${laneWords(c)}</td><td role="cell" data-label="Cost so far">${usd(c.live.costSoFarUsd)}</td>
        <td role="cell" data-label="Saving">${saving(c.live)}</td>
        <td role="cell" data-label="ETA">${["completed", "failed", "cancelled"].includes(c.status) ? "finished" : duration(c.live.eta.seconds)}</td><td role="cell" data-label="Created">${when(c.createdAt)}</td></tr>`; })}</tbody>
    </table>`}`;
}

function nextStep(j) {
  const hours = j.live.batchTimeoutHours;
  if (j.status === "waiting_batch") {
    if (j.batch && j.batch.submittedAt) return `Waiting for the Bedrock batch job, submitted ${when(j.batch.submittedAt)}, ${hours} h limit; the pages it misses go on-demand after.`;
    return "Waiting in the batch pool for other pages to share a Bedrock batch job; Process now sends it on-demand.";
  }
  if (j.status === "completed" && j.pages.failed) {
    return `Finished with ${plural(j.pages.failed, "failed page")}: the Markdown marks ${j.pages.failed === 1 ? "it" : "them"} where ${j.pages.failed === 1 ? "it stands" : "they stand"}. The reasons and a retry are below.`;
  }
  return {
    splitting: "Splitting the PDF into chunks.", pending: "Queued for on-demand conversion.", processing: "Converting on-demand.",
    paused_budget: (j.error && j.error.message) || "Paused: its next request does not fit this month's budget; resume it when the budget allows.", assembling: "Assembling the Markdown.",
    completed: "Done: the Markdown is ready.", failed: "The conversion failed; why and what to do are below.", cancelled: "Cancelled: nothing more is charged.",
  }[j.status] || j.status;
}

function RetryPanel({ job, failed, estimate, onStarted }) {
  const [asked, setAsked] = useState(false);
  const act = useAction();
  const hopeless = failed.filter((p) => !p.retryLikelyToHelp);
  const retried = job.status === "completed" && !job.retry && failed.length > 0;
  if (!asked) {
    return html`<button disabled=${!retried} onClick=${() => setAsked(true)}>Retry failed pages…</button>`;
  }
  return html`<div class="card confirm" role="group" aria-label="Retry failed pages">
    <p>A retry converts ${plural(failed.length, "page")} again, on-demand, and costs at most <strong data-testid="retry-cost">${usd(estimate && estimate.atMostUsd)}</strong> (billed for what is used).</p>
    ${hopeless.length > 0 && html`<p class="warning" data-testid="retry-warning">${hopeless.length === 1 ? `Page ${hopeless[0].page} was` : `Pages ${hopeless.map((p) => p.page).join(", ")} were`} refused for what ${hopeless.length === 1 ? "it contains" : "they contain"}: a retry most likely fails the same way and is charged again.</p>`}
    <div class="actions">
      <button disabled=${act.busy} onClick=${() => act.run(async () => { await api("POST", `/api/v1/jobs/${job.jobId}/retry`, {}); setAsked(false); onStarted(); })}>${`Retry ${plural(failed.length, "page")}`}</button>
      <button class="secondary" onClick=${() => setAsked(false)}>Not now</button>
    </div>
    <${Err} error=${act.error} />
  </div>`;
}

function Job({ id }) {
  const [job, setJob] = useState(null);
  const [failed, setFailed] = useState({ pages: [] });
  const [error, setError] = useState(null);
  const [download, setDownload] = useState(null);
  const act = useAction();
  const refresh = async () => {
    const j = await api("GET", `/api/v1/jobs/${id}`);
    setJob(j); setError(null);
    setFailed(j.pages.failed ? await api("GET", `/api/v1/jobs/${id}/pages?status=failed`) : { pages: [] });
    if (j.status === "completed") setDownload(await api("GET", `/api/v1/jobs/${id}/markdown`));
  };
  usePoll(async () => { try { await refresh(); } catch (e) { setError(e.message); } }, [id], 2000);
  if (!job) return html`<${Title}>Job ${id.slice(0, 8)}<//><${Err} error=${error} />${!error && html`<p>Loading…</p>`}`;
  const finished = ["completed", "failed", "cancelled"].includes(job.status);
  const converted = Math.max(job.pages.done - job.pages.failed, 0);
  const post = (path, body) => act.run(async () => { await api("POST", path, body); await refresh(); });
  return html`<${Title}>Job ${id.slice(0, 8)}<//>
    ${job.pages.total > 0 ? html`<p class="progress"><progress aria-label="Pages converted" max=${job.pages.total} value=${converted}></progress>
      <span>${converted} of ${job.pages.total} pages converted${job.pages.failed ? `, ${job.pages.failed} failed` : ""}</span></p>` : null}
    <p data-testid="status">Status: <strong>${statusWords(job)}</strong>${job.phase !== job.status ? ` (${job.phase.replace("_", " ")})` : ""}</p>
    <p class=${job.status === "paused_budget" ? "next loss" : "next"} data-testid="next">${nextStep(job)}</p>
    ${job.status === "failed" && job.error && html`<section class="card problem" aria-label="Why it failed" role="alert"><h2>Why it failed</h2>
      <p><code data-testid="error-code">${job.error.code}</code>: ${job.error.message}</p><p><strong>What to do:</strong> ${job.error.nextStep}</p></section>`}
    <dl><dt>Cost so far</dt><dd data-testid="cost">${usd(job.live.costSoFarUsd)}</dd><dt>All on-demand would be</dt><dd>${usd(job.live.onDemandUsd)}</dd>
      <dt>Saving</dt><dd data-testid="saving">${saving(job.live)}</dd><dt>ETA</dt><dd>${finished ? "finished" : duration(job.live.eta.seconds)}</dd>
      ${job.costUsd != null && html`<dt>Final cost</dt><dd>${usd(job.costUsd)}</dd>`}</dl>
    <div class="actions">
      ${!finished && html`<button disabled=${act.busy} onClick=${() => post(`/api/v1/files/${job.fileId}/cancel`, { jobId: id })}>Cancel</button>`}
      ${job.batchWaiting && html`<button disabled=${act.busy} onClick=${() => post(`/api/v1/files/${job.fileId}/process-now`, { jobId: id })}>Process now</button>`}
      ${job.status === "paused_budget" && html`<button disabled=${act.busy} data-testid="resume" onClick=${() => post(`/api/v1/jobs/${id}/resume`, {})}>Resume</button>`}
      ${download && html`<a class="button" href=${s3Url(download.url)} download=${download.fileName}>Download Markdown</a>`}
      ${job.pages.total > 0 ? html`<a class="button" href=${`#/page/${id}/1`}>Page view</a>` : null}
    </div>
    <${Err} error=${act.error || error} />
    ${failed.pages.length > 0 && html`<section aria-label="Failed pages" class="card"><h2>Failed pages</h2>
      <ul class="failed-pages">${failed.pages.map((p) => html`<li><a href=${`#/page/${id}/${p.page}`}>Page ${p.page}</a>: ${p.reason} (${plural(p.attempts, "attempt")}, ${p.lane === "batch" ? "batch lane" : p.lane ? "on-demand" : "never sent"}). ${p.nextStep}</li>`)}</ul>
      <${RetryPanel} job=${job} failed=${failed.pages} estimate=${failed.retryEstimate} onStarted=${refresh} />
    </section>`}`;
}

function PageView({ id, page }) {
  const [mod, setMod] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => { import("./pageview.js").then(setMod, (e) => setError(e.message)); }, []);
  const Body = mod && mod.PageBody;
  return html`<${Title}>Page ${page}<//>${Body ? html`<${Body} jobId=${id} page=${Number(page)} localFiles=${localFiles} />` : html`<${Err} error=${error} />${!error && html`<p>Loading the page view…</p>`}`}`;
}

function Folders() {
  const [form, setForm] = useState({ folder: "s3://", include: "*.pdf, *.docx, *.pptx, *.xlsx, *.html, *.epub, *.odt", exclude: "", layout: "alongside" });
  const [dry, setDry] = useState(null);
  const [dryProgress, setDryProgress] = useState("");
  const [jobs, setJobs] = useState(null);
  const [grants, setGrants] = useState(null);
  const dr = useAction(), start = useAction();
  const spec = () => ({ input: { folder: form.folder, include: form.include.split(",").map((s) => s.trim()).filter(Boolean), exclude: form.exclude.split(",").map((s) => s.trim()).filter(Boolean) }, output: { layout: form.layout } });
  usePoll(async () => setJobs((await api("GET", "/api/v1/folder-jobs")).folderJobs), [], 4000);
  useEffect(() => { api("GET", "/api/v1/folder-grants").then((g) => setGrants(g.folders), () => setGrants([])); }, []);
  const set = (k) => (e) => { setForm({ ...form, [k]: e.target.value }); setDry(null); };
  return html`<${Title}>Folder jobs<//>
    <section aria-label="Folders you may use" class="card"><h2>Folders you may use</h2>
      ${grants === null ? html`<p>Loading…</p>` : grants.length === 0 ? html`<p class="empty">No folder is granted to you in this deployment; ask its operator (folderSources).</p>` : html`
      <ul class="grants">${grants.map((g) => html`<li><code>${g}</code> <button class="secondary" onClick=${() => { setForm({ ...form, folder: g }); setDry(null); }}>Use this folder</button></li>`)}</ul>`}
    </section>
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
    ${dry && html`<${DryRun} dry=${dry} />`}
    <h2>Your folder jobs</h2>
    ${jobs === null ? html`<p>Loading…</p>` : jobs.length === 0 ? html`<p class="empty">No folder jobs yet: pick a folder above, dry run it, then start it.</p>` : html`
    <ul class="folder-jobs">${jobs.map((j) => html`<li><a href=${`#/folder/${j.id}`}>${j.name || j.id}</a>: ${j.status.replaceAll("_", " ")}, ${j.files.completed} of ${j.files.discovered} files done (${when(j.createdAt)})</li>`)}</ul>`}`;
}

function DryRun({ dry }) {
  const f = dry.files, failing = Object.entries(f.failing || {});
  const types = Object.entries(f.byType || {}).map(([t, n]) => `${n} ${t}`).join(", ") || "none";
  return html`<section class="card" aria-label="Dry run"><h2>Dry run: nothing created, nothing billed</h2>
    <table class="keys"><tbody>
      <tr><th scope="row">Files to convert</th><td data-testid="dry-to-convert">${f.toConvert}</td></tr>
      <tr><th scope="row">Already converted</th><td>${f.alreadyProcessed}</td></tr>
      <tr><th scope="row">Left out</th><td>${f.excluded} (by type: ${types})</td></tr>
      <tr><th scope="row">Pages</th><td>${dry.pages.total} (${dry.pages.method === "exact" ? "counted" : `about; ${dry.pages.low}–${dry.pages.high}`})</td></tr>
      <tr><th scope="row">Lane</th><td>${dry.lane.name === "batch" ? "batch (half price)" : "on-demand"}: ${dry.lane.reason}</td></tr>
      <tr><th scope="row">Cost</th><td>on-demand ${usd(dry.estimate.onDemandUsd)}, batch ${usd(dry.estimate.batchUsd)}</td></tr>
      <tr><th scope="row">Time</th><td>${dry.turnaround.batchUpToHours ? `up to ${dry.turnaround.batchUpToHours} h (batch lane), ~${duration(dry.turnaround.onDemandSeconds)} on-demand` : `~${duration(dry.turnaround.onDemandSeconds)} on-demand`}${dry.listing.complete ? "" : ` (${dry.listing.note})`}</td></tr>
    </tbody></table>
    ${failing.length > 0 && html`<table class="stack" role="table"><caption>Files that will fail</caption><thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">File</th><th scope="col" role="columnheader">Error</th></tr></thead>
      <tbody role="rowgroup">${failing.map(([key, id]) => html`<tr role="row"><td role="cell" data-label="File">${key}</td><td role="cell" data-label="Error"><code>${id}</code></td></tr>`)}</tbody></table>`}
  </section>`;
}

function Folder({ id }) {
  const [job, setJob] = useState(null);
  const [files, setFiles] = useState([]);
  const [report, setReport] = useState(null);
  const [error, setError] = useState(null);
  const act = useAction();
  usePoll(async () => {
    try { setJob(await api("GET", `/api/v1/folder-jobs/${id}`)); setFiles((await api("GET", `/api/v1/folder-jobs/${id}/files`)).files); setError(null); } catch (e) { setError(e.message); }
  }, [id], 3000);
  if (!job) return html`<${Title}>Folder job<//><${Err} error=${error} />${!error && html`<p>Loading…</p>`}`;
  const errorIds = [...new Set(files.filter((f) => f.error).map((f) => f.error.code))];
  const ended = ["completed", "completed_with_failures", "cancelled", "error"].includes(job.status);
  const counts = [["Found", "discovered"], ["Left out", "excluded"], ["Waiting", "queued"], ["Converting", "processing"], ["Converted", "completed"], ["Failed", "failed"], ["Skipped", "skipped"]];
  return html`<${Title}>Folder job ${job.name || id}<//>
    <p data-testid="folder-status">Status: <strong>${job.status === "error" ? "could not run" : job.status.replaceAll("_", " ")}</strong>${ended ? "" : `; ${job.throughputPagesPerMinute ?? "–"} pages a minute; done in ${duration(job.etaSeconds)}`}</p>
    ${job.error && html`<section class="card problem" aria-label="Why it stopped" role="alert"><h2>Why it stopped</h2>
      <p><code>${job.error.code}</code>: ${job.error.message}</p><p><strong>What to do:</strong> ${job.error.nextStep}</p>
      <button disabled=${act.busy} onClick=${() => act.run(() => api("POST", `/api/v1/folder-jobs/${id}/retry`, {}))}>List the folder again</button></section>`}
    <dl class="counts">${counts.map(([label, k]) => html`<dt>${label}</dt><dd>${job.files[k]} ${job.files[k] === 1 ? "file" : "files"}</dd>`)}</dl>
    <div class="actions">
      ${errorIds.map((e) => html`<button disabled=${act.busy} onClick=${() => act.run(() => api("POST", `/api/v1/folder-jobs/${id}/retry`, { errorIds: [e] }))}>Retry ${e}</button>`)}
      ${!ended && html`<button disabled=${act.busy} onClick=${() => act.run(() => api("POST", `/api/v1/folder-jobs/${id}/cancel`))}>Cancel</button>`}
      <button disabled=${act.busy} onClick=${() => act.run(async () => setReport(await reportText(id)))}>Report</button>
    </div>
    <${Err} error=${act.error || error} />
    ${files.length === 0 ? html`<p class="empty">No files listed yet.</p>` : html`
    <table class="stack" role="table"><caption>Files</caption><thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">File</th><th scope="col" role="columnheader">Status</th><th scope="col" role="columnheader">Error</th></tr></thead>
      <tbody role="rowgroup">${files.map((f) => html`<tr role="row"><td role="cell" data-label="File">${f.key}</td><td role="cell" data-label="Status">${f.status}</td><td role="cell" data-label="Error">${f.error ? `${f.error.code} ${f.error.message}` : ""}</td></tr>`)}</tbody></table>`}
    ${report && html`<pre aria-label="Report" tabindex="0">${report}</pre>`}`;
}

async function reportText(id) {
  const r = await fetch(`/api/v1/folder-jobs/${id}/report`, { headers: { Authorization: bearer() } });
  if (!r.ok) throw new ApiError(r.status, null);
  return r.text();
}

function Budget() {
  const [b, setB] = useState(null);
  const [error, setError] = useState(null);
  usePoll(async () => { try { setB(await api("GET", "/api/v1/budget")); setError(null); } catch (e) { setError(e.message); } }, [], 5000);
  if (!b) return html`<${Title}>Budget<//><${Err} error=${error} />${!error && html`<p>Loading…</p>`}`;
  const total = Number(b.usdPerMonth), spent = Number(b.spentUsd), held = Number(b.heldUsd), left = Number(b.leftUsd);
  const pct = (v) => (total > 0 ? Math.min(100, (v / total) * 100) : 100);
  return html`<${Title}>Budget<//><${Err} error=${error} />
    <section class="card" aria-label="This month" data-testid="budget"><h2>This month (UTC): ${usd2(total)}</h2>
      <div class="bar" role="img" data-testid="budget-bar" aria-label=${`Budget this month: ${usd2(spent)} spent, ${usd2(held)} held, ${usd2(left)} left of ${usd2(total)}`}>
        <span class="spent" style=${{ width: `${pct(spent)}%` }}></span><span class="held" style=${{ width: `${pct(held)}%` }}></span>
      </div>
      <dl class="legend">
        <dt><span class="swatch spent" aria-hidden="true"></span>Spent</dt><dd data-testid="spent">${usd2(spent)}</dd>
        <dt><span class="swatch held" aria-hidden="true"></span>Held for running jobs</dt><dd data-testid="held">${usd2(held)}</dd>
        <dt><span class="swatch left" aria-hidden="true"></span>Left</dt><dd data-testid="left">${usd2(left)}</dd>
      </dl>
      <p class="hint">A job holds what it may spend at most while it runs; what it does not use comes back when it ends.</p>
    </section>
    <section class="card" aria-label="Limits"><h2>At once</h2><dl>
      <dt>Conversions running</dt><dd>${b.liveJobs} of ${b.maxLiveJobs}</dd>
      <dt>Pages in them</dt><dd>${b.livePages} of ${b.maxLivePages}</dd></dl></section>`;
}

const VIEWS = { jobs: "Jobs", job: "Job", page: "Page", folders: "Folder jobs", folder: "Folder job", budget: "Budget", new: "New conversion" };

function App() {
  const [user, setUser] = useState(null);
  const route = useRoute();
  const [view, a, b] = route;
  const first = useRef(true);
  useEffect(() => { resume().then((who) => who && setUser(who)); }, []);
  useEffect(() => { // a route change focuses the new view's heading; a first load or a sign-in starts at the top (skip link first)
    if (first.current) { first.current = false; return; }
    const t = document.getElementById("view-title");
    if (t) t.focus();
  }, [route.join("/")]);
  useEffect(() => { document.title = `${VIEWS[view] || "New conversion"} · batchlane`; }, [view]);
  if (!user || !signedIn()) return html`<${SignIn} onDone=${setUser} />`;
  const body = view === "jobs" ? html`<${Jobs} />` : view === "job" ? html`<${Job} id=${a} />` : view === "page" ? html`<${PageView} id=${a} page=${b} />`
    : view === "folders" ? html`<${Folders} />` : view === "folder" ? html`<${Folder} id=${a} />` : view === "budget" ? html`<${Budget} />` : html`<${NewConversion} />`;
  const here = (name) => (view === name || (!VIEWS[view] && name === "new") ? "page" : undefined);
  return html`<a class="skip" href="#main" onClick=${(e) => { e.preventDefault(); const m = document.getElementById("view-title"); if (m) m.focus(); }}>Skip to the main content</a>
    <header><nav aria-label="Main"><a href="#/new" aria-current=${here("new")}>New conversion</a><a href="#/jobs" aria-current=${here("jobs")}>Jobs</a><a href="#/folders" aria-current=${here("folders")}>Folder jobs</a><a href="#/budget" aria-current=${here("budget")}>Budget</a></nav>
      <div class="who"><span>Signed in as ${user}</span><button class="secondary" onClick=${async () => { await signOut(); setUser(null); location.hash = "/new"; }}>Sign out</button></div></header>
    <main id="main">${body}</main>`;
}

fetch("/console-config.json").then((r) => (r.ok ? r.json() : { mode: "local" })).catch(() => ({ mode: "local" }))
  .then((c) => { setConfig(c); render(html`<${App} />`, document.getElementById("app")); });
