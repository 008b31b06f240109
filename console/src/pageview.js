// The page view, loaded only when opened: pdf.js draws one page (from the local file, or by Range reads of the stored
// source through a presigned URL), beside the page's Markdown, rendered by marked and sanitised by DOMPurify, with its
// figures. Arrow keys and a page number box move between pages.
import { h } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import htm from "htm";
import { marked } from "marked";
import DOMPurify from "dompurify";
import * as pdfjs from "pdfjs-dist";
import workerUrl from "pdfjs-dist/build/pdf.worker.min.mjs?url";
import { api, s3Url } from "./api.js";

const html = htm.bind(h);
pdfjs.GlobalWorkerOptions.workerSrc = workerUrl;
const documents = new Map(); // jobId → {pdf, pages, images}

// The Markdown split at the page markers (domain/markdown.py): "<!-- Page N -->" or "<!-- Page N: failed (reason) -->".
export function splitPages(markdown) {
  const pages = new Map();
  const re = /<!-- Page (\d+)(?:: (failed|truncated)(?: \(([^)]*)\))?)? -->/g;
  let m, last = null;
  while ((m = re.exec(markdown)) !== null) {
    const n = Number(m[1]);
    if (m[2] === "truncated") continue;
    if (last) last.text = markdown.slice(last.end, m.index);
    last = { n, failed: m[2] === "failed", reason: m[3] || null, end: re.lastIndex, text: "" };
    pages.set(n, last);
  }
  if (last) last.text = markdown.slice(last.end);
  return pages;
}

async function load(jobId, localFiles) {
  const job = await api("GET", `/api/v1/jobs/${jobId}`);
  let entry = documents.get(jobId);
  if (!entry) { // the source never changes: opened once a session
    const local = localFiles.get(job.fileId);
    // kind (docs/formats.md): pdf, pages (a picture as the PDF the split made) or document (born digital: no page image)
    const stored = await api("GET", `/api/v1/jobs/${jobId}/source`);
    let pdf = null;
    if (stored.kind !== "document") {
      const source = local && stored.kind === "pdf"
        ? { data: new Uint8Array(await local.arrayBuffer()) }
        : { url: s3Url(stored.url), disableAutoFetch: true, disableStream: true, rangeChunkSize: 16384 };
      pdf = await pdfjs.getDocument({ ...source, isEvalSupported: false }).promise;
    }
    entry = { pdf, version: null };
    documents.set(jobId, entry);
  }
  const version = `${job.status}|${job.finishedAt}|${job.pages.failed}|${job.retry ? job.retry.attempt : ""}`;
  if (entry.version !== version) { // a retry rewrote the Markdown since: read it again
    let pages = new Map();
    let images = new Map(); // the Markdown's relative figure link (book.images/p12-1.png) → its presigned URL
    if (job.status === "completed") {
      const dl = await api("GET", `/api/v1/jobs/${jobId}/markdown`);
      pages = splitPages(await (await fetch(s3Url(dl.url))).text());
      images = new Map((dl.images || []).map((i) => [i.fileName, s3Url(i.url)]));
    }
    const failed = job.pages.failed ? (await api("GET", `/api/v1/jobs/${jobId}/pages?status=failed`)).pages : [];
    for (const f of failed) pages.set(f.page, { n: f.page, failed: true, reason: f.reason, nextStep: f.nextStep, text: "" });
    Object.assign(entry, { pages, images, job, version });
  }
  return { ...entry };
}

// A figure is fetched (connect-src) and shown from a blob: URL: the stored image is on S3's origin, which img-src
// does not name on AWS, and offline it comes through the same-origin /_s3 forwarder.
async function showFigures(root, images) {
  for (const img of root.querySelectorAll("img")) {
    const link = decodeURI(img.getAttribute("src") || "");
    const url = images.get(link);
    if (!url) continue;
    img.removeAttribute("src");
    try {
      const answer = await fetch(url);
      if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
      img.src = URL.createObjectURL(await answer.blob());
      img.dataset.loaded = "true";
    } catch (e) {
      img.alt = `${img.alt} (the figure could not be loaded: ${e.message})`;
    }
  }
}

export function PageBody({ jobId, page, localFiles }) {
  const [doc, setDoc] = useState(null);
  const [error, setError] = useState(null);
  const [wanted, setWanted] = useState(String(page));
  const canvas = useRef(null);
  const markdown = useRef(null);
  const total = doc ? (doc.pdf ? doc.pdf.numPages : doc.job.pages.total) : 0;
  const go = (n) => { if (doc && n >= 1 && n <= total && n !== page) location.hash = `/page/${jobId}/${n}`; };
  useEffect(() => { load(jobId, localFiles).then(setDoc, (e) => setError(e.message)); }, [jobId]);
  useEffect(() => setWanted(String(page)), [page]);
  useEffect(() => { // ← and → page through the document (not while typing in a field)
    const onKey = (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || /^(INPUT|SELECT|TEXTAREA)$/.test(e.target.tagName)) return;
      if (e.key === "ArrowLeft") go(page - 1);
      if (e.key === "ArrowRight") go(page + 1);
    };
    addEventListener("keydown", onKey);
    return () => removeEventListener("keydown", onKey);
  }, [doc, page]);
  useEffect(() => {
    if (!doc || !doc.pdf || !canvas.current) return undefined;
    let cancelled = false;
    const target = canvas.current;
    target.dataset.rendered = "false";
    (async () => {
      const pdfPage = await doc.pdf.getPage(page);
      const viewport = pdfPage.getViewport({ scale: 1.3 });
      if (cancelled) return;
      target.width = viewport.width; target.height = viewport.height;
      await pdfPage.render({ canvas: target, canvasContext: target.getContext("2d"), viewport }).promise;
      if (!cancelled) target.dataset.rendered = "true";
    })().catch((e) => !cancelled && setError(`The page could not be drawn: ${e.message}`));
    return () => { cancelled = true; };
  }, [doc, page]);
  useEffect(() => { if (doc && markdown.current) showFigures(markdown.current, doc.images); }, [doc, page]);
  if (error) return html`<p class="error" role="alert">The page could not be shown: ${error}</p>`;
  if (!doc) return html`<p>Loading the page view…</p>`;
  const p = doc.pages.get(page);
  const safe = p && !p.failed ? DOMPurify.sanitize(marked.parse(p.text)) : "";
  const nav = (n) => `#/page/${jobId}/${n}`;
  return html`<div>
    <nav aria-label="Pages" class="pager">
      ${page > 1 ? html`<a class="button" href=${nav(page - 1)}>Previous page</a>` : null}
      <form class="jump" onSubmit=${(e) => { e.preventDefault(); go(Number(wanted)); }}>
        <label for="page-number">Page</label>
        <input id="page-number" type="number" inputmode="numeric" min="1" max=${total} value=${wanted} onInput=${(e) => setWanted(e.target.value)} />
        <span>of ${total}</span><button type="submit" class="secondary">Go</button>
      </form>
      ${page < total ? html`<a class="button" href=${nav(page + 1)}>Next page</a>` : null}
      <a href=${`#/job/${jobId}`}>Back to the job</a>
    </nav>
    <p class="hint">← and → turn the pages.</p>
    <div class="split">
      ${doc.pdf ? html`<canvas ref=${canvas} aria-label=${`Page ${page} of the PDF`} role="img"></canvas>`
        : html`<p class="hint" data-testid="no-page-image">A born-digital document has no page image: this page is its own section, converted with no model call.</p>`}
      <section aria-label="Markdown of this page" tabindex="0" class=${`markdown${p && p.failed ? " failed" : ""}`}>
        ${p && p.failed ? html`<p class="error">This page failed: ${p.reason}</p>${p.nextStep ? html`<p>${p.nextStep}</p>` : null}`
          : p ? html`<div ref=${markdown} key=${page} dangerouslySetInnerHTML=${{ __html: safe }} />` : html`<p>No Markdown yet: the job has not completed.</p>`}
      </section>
    </div></div>`;
}
