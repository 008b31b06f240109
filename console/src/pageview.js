// The page view, loaded only when opened: pdf.js draws one page (from the local file, or by Range reads of
// the stored source through a presigned URL), beside the page's Markdown, rendered by marked and sanitised by DOMPurify.
import { h, render } from "preact";
import htm from "htm";
import { marked } from "marked";
import DOMPurify from "dompurify";
import * as pdfjs from "pdfjs-dist";
import workerUrl from "pdfjs-dist/build/pdf.worker.min.mjs?url";
import { api, s3Url } from "./api.js";

const html = htm.bind(h);
pdfjs.GlobalWorkerOptions.workerSrc = workerUrl;
const documents = new Map(); // jobId → {pdf, pages}

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
  if (documents.has(jobId)) return documents.get(jobId);
  const job = await api("GET", `/api/v1/jobs/${jobId}`);
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
  let pages = new Map();
  if (job.status === "completed") {
    const dl = await api("GET", `/api/v1/jobs/${jobId}/markdown`);
    pages = splitPages(await (await fetch(s3Url(dl.url))).text());
  }
  const failed = job.pages.failed ? (await api("GET", `/api/v1/jobs/${jobId}/pages?status=failed`)).pages : [];
  for (const f of failed) pages.set(f.page, { n: f.page, failed: true, reason: f.reason, text: "" });
  const entry = { pdf, pages, job };
  documents.set(jobId, entry);
  return entry;
}

export async function mount(root, { jobId, page, localFiles }) {
  try {
    const { pdf, pages, job } = await load(jobId, localFiles);
    const total = pdf ? pdf.numPages : job.pages.total;
    const p = pages.get(page);
    const safe = p && !p.failed ? DOMPurify.sanitize(marked.parse(p.text)) : "";
    const nav = (n) => `#/page/${jobId}/${n}`;
    render(html`<div>
      <nav aria-label="Pages" class="actions">
        ${page > 1 ? html`<a class="button" href=${nav(page - 1)}>Previous page</a>` : null}
        <span>Page ${page} of ${total}</span>
        ${page < total ? html`<a class="button" href=${nav(page + 1)}>Next page</a>` : null}
        <a href=${`#/job/${jobId}`}>Back to the job</a>
      </nav>
      <div class="split">
        ${pdf ? html`<canvas aria-label=${`Page ${page} of the PDF`} role="img"></canvas>`
          : html`<p class="hint" data-testid="no-page-image">A born-digital document has no page image: this page is its own section, converted with no model call.</p>`}
        <section aria-label="Markdown of this page" class=${`markdown${p && p.failed ? " failed" : ""}`}>
          ${p && p.failed ? html`<p class="error">This page failed: ${p.reason}</p>` : p ? html`<div dangerouslySetInnerHTML=${{ __html: safe }} />` : html`<p>No Markdown yet.</p>`}
        </section>
      </div></div>`, root);
    if (!pdf) return;
    const pdfPage = await pdf.getPage(page);
    const viewport = pdfPage.getViewport({ scale: 1.3 });
    const canvas = root.querySelector("canvas");
    canvas.width = viewport.width; canvas.height = viewport.height;
    await pdfPage.render({ canvas, canvasContext: canvas.getContext("2d"), viewport }).promise;
    canvas.dataset.rendered = "true";
  } catch (e) {
    render(html`<p class="error" role="alert">The page could not be shown: ${e.message}</p>`, root);
  }
}
