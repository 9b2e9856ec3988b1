// kbtools in a browser: search, read, browse and follow relations of the knowledge bases a
// `kbtools serve` serves. It calls the same /openapi/v2/… routes as any client. Every text
// from the knowledge base is put in the page as text nodes (never as HTML), so a page's
// Markdown cannot run code here; the server's Content-Security-Policy allows this file only.
"use strict";

const API = "/openapi/v2";
const TOKEN_KEY = "kbtools-token";

// ---------------------------------------------------------------------------------------------
// Interface text, English and Chinese, following the browser's language.

const TEXT = {
  en: {
    search: "Search", browse: "Browse", bases: "Knowledge bases", placeholder: "Ask a question or type words…",
    mode: "Mode", hybrid: "hybrid", file: "file", graph: "graph", any: "any",
    status: "OKF status", trust: "Trust tier", freshness: "Freshness",
    results: (n, more) => `${n} result${n === 1 ? "" : "s"}${more ? ", more on the next page" : ""}`,
    none: "Nothing found. Try other words, or browse the tree.",
    next: "Next page", previous: "Previous page", lanes: "found by",
    found: { path: "path", title: "title", content: "text", graph_node: "links",
      file_relationship: "links", metadata: "metadata" },
    ways: { name: "name", text: "text", meaning: "meaning", "other-language": "other language",
      links: "links", nearest: "nearest page" },
    related: "Related files", graphView: "Relations", noRelated: "No related files.",
    frontmatter: "Frontmatter", signals: "OKF signals", depth: "Depth",
    tokenTitle: "This server needs a token", tokenLabel: "Token", tokenSave: "Continue",
    tokenHelp: "The token is kept in this browser tab only (session storage), never in the address.",
    tokenWrong: "That token was refused.", loading: "Loading…", error: "Error",
    open: "Open", folder: "Folder", up: "Up", root: "root", files: "files",
    raw: "JSON", notFound: "Not found.", pageOf: "Page",
    pages: (n) => `${n} page${n === 1 ? "" : "s"}`,
  },
  zh: {
    search: "搜索", browse: "浏览", bases: "知识库", placeholder: "输入问题或关键词…",
    mode: "模式", hybrid: "混合", file: "文件", graph: "关系图", any: "不限",
    status: "OKF 状态", trust: "可信级别", freshness: "时效",
    results: (n, more) => `${n} 条结果${more ? "，下一页还有" : ""}`,
    none: "没有找到。换个说法，或浏览目录。",
    next: "下一页", previous: "上一页", lanes: "命中于",
    found: { path: "路径", title: "标题", content: "正文", graph_node: "链接",
      file_relationship: "链接", metadata: "元数据" },
    ways: { name: "名称", text: "正文", meaning: "语义", "other-language": "跨语言",
      links: "链接", nearest: "相近页面" },
    related: "相关文件", graphView: "关系", noRelated: "没有相关文件。",
    frontmatter: "元数据", signals: "OKF 信号", depth: "深度",
    tokenTitle: "此服务器需要令牌", tokenLabel: "令牌", tokenSave: "继续",
    tokenHelp: "令牌只保存在此浏览器标签页（会话存储）中，不会出现在地址里。",
    tokenWrong: "令牌被拒绝。", loading: "加载中…", error: "错误",
    open: "打开", folder: "文件夹", up: "上一级", root: "根目录", files: "个文件",
    raw: "JSON", notFound: "未找到。", pageOf: "第",
    pages: (n) => `${n} 个页面`,
  },
};
const LANG = (navigator.languages || [navigator.language || "en"]).some((l) => /^zh/i.test(l))
  ? "zh" : "en";
const t = TEXT[LANG];
document.documentElement.lang = LANG === "zh" ? "zh-CN" : "en";

// ---------------------------------------------------------------------------------------------
// DOM helpers: elements are built from text, never from HTML strings.

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

const main = () => document.getElementById("main");

// ---------------------------------------------------------------------------------------------
// The API, with the token of this tab.

class Unauthorized extends Error {}

async function api(path, params) {
  return (await apiAnswer(path, params)).body;
}

// An API answer: its body, and its headers (a search's `x-kbtools-marks` and
// `x-kbtools-found-by`, hints for this page beside the contract's body).
async function apiAnswer(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null && value !== "") query.set(key, value);
  }
  const url = API + path + (query.toString() ? "?" + query : "");
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = "Bearer " + token;
  const response = await fetch(url, { headers });
  if (response.status === 401) throw new Unauthorized();
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = body.error || {};
    const e = new Error(`${error.code || response.status}: ${error.message || response.statusText}`);
    e.status = response.status;
    throw e;
  }
  return { body, headers: response.headers };
}

// ---------------------------------------------------------------------------------------------
// Routing: /, /kb/{id}, /kb/{id}/read?path=…, /kb/{id}/tree?parent=…; the address holds the
// query and the file read, so a view can be shared and reloaded.

function navigate(href, replace) {
  if (replace) history.replaceState(null, "", href);
  else history.pushState(null, "", href);
  route();
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[data-nav]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", () => route());

let bases = null;

async function knowledgeBases() {
  if (!bases) bases = (await api("/knowledge-bases", { limit: 100 })).items || [];
  return bases;
}

const kbHref = (kb, rest, params) => {
  const query = params ? new URLSearchParams(params).toString() : "";
  return `/kb/${encodeURIComponent(kb)}${rest || ""}${query ? "?" + query : ""}`;
};

async function route() {
  const path = location.pathname;
  const params = new URLSearchParams(location.search);
  const match = path.match(/^\/kb\/([^/]+)(\/[a-z]+)?\/?$/);
  try {
    if (!match) {
      const all = await knowledgeBases();
      // The only knowledge base: its search, with the query and filters of `/?q=…` kept.
      if (all.length === 1) {
        const kept = Object.fromEntries(params);
        return navigate(kbHref(all[0].knowledgeBaseId, "", Object.keys(kept).length ? kept : null), true);
      }
      return showBases(all);
    }
    const kb = decodeURIComponent(match[1]);
    const all = await knowledgeBases();
    const base = all.find((b) => b.knowledgeBaseId === kb);
    header(kb, base);
    switch (match[2] || "") {
      case "": return await showSearch(kb, params);
      case "/read": return await showReader(kb, params.get("path") || "");
      case "/tree": return await showTree(kb, params.get("parent") || "");
      default: return showMessage(t.notFound);
    }
  } catch (e) {
    if (e instanceof Unauthorized) return showLogin();
    showMessage(`${t.error}: ${e.message}`);
  }
}

function header(kb, base) {
  const name = document.getElementById("kb-name");
  name.textContent = base ? base.name || base.knowledgeBaseName || kb : kb;
  const nav = clear(document.getElementById("nav"));
  append(nav, [
    el("a", { href: kbHref(kb), "data-nav": true }, t.search),
    el("a", { href: kbHref(kb, "/tree"), "data-nav": true }, t.browse),
    el("a", { href: "/", "data-nav": true, onclick: () => { bases = null; } }, t.bases),
  ]);
  document.title = `${name.textContent} · kbtools`;
}

function showMessage(text) {
  append(clear(main()), [el("p", { class: "message" }, text)]);
}

// ---------------------------------------------------------------------------------------------
// The token, asked for when the server answers 401; kept in this tab's session storage.

function showLogin(wrong) {
  const input = el("input", { type: "password", id: "token", autocomplete: "current-password", required: true });
  const form = el("form", {
    class: "login",
    onsubmit: (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      bases = null;
      route().then(() => {
        if (document.getElementById("token")) showLogin(true);
      });
    },
  },
  el("h1", {}, t.tokenTitle),
  el("label", { for: "token" }, t.tokenLabel), input,
  el("button", { type: "submit" }, t.tokenSave),
  el("p", { class: "help" }, t.tokenHelp),
  wrong ? el("p", { class: "error", role: "alert" }, t.tokenWrong) : null);
  append(clear(main()), [form]);
  input.focus();
}

function showBases(all) {
  document.getElementById("kb-name").textContent = "";
  clear(document.getElementById("nav"));
  append(clear(main()), [
    el("h1", {}, t.bases),
    el("ul", { class: "bases" }, all.map((b) => el("li", {},
      el("a", { href: kbHref(b.knowledgeBaseId), "data-nav": true }, b.name || b.knowledgeBaseId),
      " ", pageCount(b.knowledgeBaseId),
      " ", el("span", { class: "muted" }, b.knowledgeBaseId)))),
  ]);
}

// "36 pages": the files under `pages/` (the tree's count), filled in when the answer comes.
const counts = new Map();
function pageCount(kb) {
  const span = el("span", { class: "muted count" });
  if (!counts.has(kb)) {
    counts.set(kb, api(`/knowledge-bases/${encodeURIComponent(kb)}/tree`, { limit: 100 })
      .then((answer) => (answer.items || []).find((i) => i.path === "pages")?.descendantFileCount ?? null)
      .catch(() => null));
  }
  counts.get(kb).then((n) => { if (n !== null) span.textContent = t.pages(n); });
  return span;
}

// ---------------------------------------------------------------------------------------------
// Search.

const MODES = ["hybrid", "file", "graph"];
const FILTERS = [
  ["okfStatus", t.status, ["draft", "stable", "deprecated"]],
  ["okfTrustTier", t.trust, ["unverified", "machine-confirmed", "human-reviewed"]],
  ["okfFreshness", t.freshness, ["fresh", "stale"]],
];

function select(name, label, values, current, names) {
  return el("label", { class: "field" }, label, " ",
    el("select", { name }, values.map((v, i) =>
      el("option", { value: v, selected: v === current }, names ? names[i] : v))));
}

async function showSearch(kb, params) {
  const query = params.get("q") || "";
  const mode = params.get("mode") || "hybrid";
  const input = el("input", {
    type: "search", name: "q", id: "q", value: query, placeholder: t.placeholder,
    autocomplete: "off", "aria-label": t.search, minlength: 2, maxlength: 512,
  });
  const form = el("form", { class: "search", role: "search", onsubmit: (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const next = {};
    for (const [key, value] of data.entries()) if (value && value !== "any") next[key] = value;
    if (next.mode === "hybrid") delete next.mode;
    navigate(kbHref(kb, "", next));
  } },
  input,
  el("button", { type: "submit" }, t.search),
  el("div", { class: "filters" },
    select("mode", t.mode, MODES, mode, MODES.map((m) => t[m])),
    FILTERS.map(([name, label, values]) => {
      const field = select(name, label, ["any", ...values], params.get(name) || "any", [t.any, ...values]);
      // The OKF filters are for knowledge bases whose pages carry OKF metadata: shown when a
      // filter is set or a result has some, hidden otherwise.
      field.classList.add("okf");
      field.hidden = !FILTERS.some(([n]) => params.get(n));
      return field;
    })));
  const results = el("div", { id: "results", "aria-live": "polite" });
  append(clear(main()), [form, results]);
  if (!query) {
    append(results, [el("p", {}, pageCount(kb))]);
    input.focus();
    return;
  }
  append(results, [el("p", { class: "muted" }, t.loading)]);
  const request = { query, mode, limit: 10, cursor: params.get("cursor") || undefined };
  for (const [name] of FILTERS) request[name] = params.get(name) || undefined;
  const started = performance.now();
  const { body: answer, headers } = await apiAnswer(`/knowledge-bases/${encodeURIComponent(kb)}/files/search`, request);
  clear(results);
  const items = answer.items || [];
  results.dataset.ms = String(Math.round(performance.now() - started));
  if (!items.length) {
    append(results, [el("p", { class: "message" }, t.none)]);
    return;
  }
  if (items.some(hasOkf)) form.querySelectorAll("label.okf").forEach((f) => { f.hidden = false; });
  const terms = serverMarks(headers) ?? queryTerms(query);
  const ways = (headers.get("x-kbtools-found-by") ?? "").split(",");
  append(results, [
    el("p", { class: "muted summary" }, t.results(items.length, !!answer.nextCursor)),
    el("ol", { class: "results" }, items.map((item, i) => resultItem(kb, item, terms, i, ways[i]))),
    pager(kb, params, answer.nextCursor),
  ]);
}

// Whether a result carries OKF metadata (a type, a status or trust other than the defaults).
function hasOkf(item) {
  const s = item.okfSignals || {};
  return !!item.okfType || (s.effectiveStatus && s.effectiveStatus !== "stable") ||
    (s.trustTier && s.trustTier !== "unverified") || !!s.staleAfter || !!s.latestVerifiedAt;
}

// The terms the server says to mark (those on at most half of the pages: a word every page
// holds marks nothing), as `queryTerms` gives them; null from a server that does not say.
function serverMarks(headers) {
  const marks = headers.get("x-kbtools-marks");
  if (marks === null) return null;
  const cjk = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
  return marks.split(" ").filter(Boolean).map((m) => {
    let term;
    try { term = decodeURIComponent(m); } catch { term = m; }
    return [term, !cjk.test(term)];
  });
}

function resultItem(kb, item, terms, i, ways) {
  const href = kbHref(kb, "/read", { path: item.path });
  return el("li", { class: "result", "data-index": i },
    el("a", { class: "title", href, "data-nav": true }, item.title || item.path),
    el("div", { class: "path" }, item.path),
    item.sourceExcerpt ? el("p", { class: "excerpt" }, highlight(item.sourceExcerpt, terms)) : null,
    el("div", { class: "lanes" }, el("span", { class: "muted" }, t.lanes + ": "),
      foundBy(item.matchedFields, ways).map((label) => el("span", { class: "lane" }, label))));
}

// The evidence of a result in a reader's words ("name, meaning, links"), each once: the ways
// the server names (`x-kbtools-found-by`: its text, its meaning, another language), else its
// matched fields.
function foundBy(fields, ways) {
  const named = (ways || "").split("+").filter(Boolean);
  const labels = named.length
    ? named.map((way) => t.ways[way] || way)
    : (fields || []).map((field) => t.found[field] || field);
  return labels.filter((label, i) => labels.indexOf(label) === i);
}

// Previous pages are the cursors before this one, kept in the address as `back`.
function pager(kb, params, nextCursor) {
  const back = (params.get("back") || "").split(",").filter(Boolean);
  const here = params.get("cursor") || "";
  const links = [];
  if (here) {
    const previous = Object.fromEntries(params);
    const before = back.slice(0, -1);
    if (back.length && back[back.length - 1] !== "-") previous.cursor = back[back.length - 1];
    else delete previous.cursor;
    if (before.length) previous.back = before.join(","); else delete previous.back;
    links.push(el("a", { href: kbHref(kb, "", previous), "data-nav": true, class: "previous" }, t.previous));
  }
  if (nextCursor) {
    const next = Object.fromEntries(params);
    next.cursor = nextCursor;
    next.back = [...back, here || "-"].join(",");
    links.push(el("a", { href: kbHref(kb, "", next), "data-nav": true, class: "next", rel: "next" }, t.next));
  }
  return el("nav", { class: "pager" }, links);
}

// Words too common to mark.
const STOP = new Set(("a an and are as at be by can do does for from how i in is it me my of on or " +
  "the this that to was what when where which who why with you your").split(" "));

// The words of the query to mark in a text: Latin words of two letters or more (not the most
// common ones, English endings dropped), matched at the start of a word; and every two consecutive characters of a run
// of Chinese (or Japanese, Korean) characters, matched anywhere.
function queryTerms(query) {
  const terms = new Map();
  const cjk = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]/u;
  for (const word of query.toLowerCase().match(/[\p{L}\p{N}_]+/gu) || []) {
    const chars = [...word].filter((c) => cjk.test(c));
    if (chars.length === 1) terms.set(chars[0], false);
    for (let i = 0; i + 1 < chars.length; i++) terms.set(chars[i] + chars[i + 1], false);
    for (const latin of word.match(/[\p{L}\p{N}_]+/gu) || []) {
      const plain = [...latin].filter((c) => !cjk.test(c)).join("");
      if ([...plain].length < 2 || STOP.has(plain)) continue;
      // A plain English stem, so that `files` marks `file` and `related` marks `relation`.
      const stem = plain.length > 5 ? plain.replace(/(ing|ed)$/, "") : plain;
      const singular = stem.length > 3 ? stem.replace(/s$/, "") : stem;
      terms.set(singular, true);
    }
  }
  return [...terms];
}

// `text` as nodes with the query's terms in <mark>.
function highlight(text, terms) {
  if (!terms.length) return [text];
  const lower = text.toLowerCase();
  const marks = new Array(text.length).fill(false);
  const wordChar = /[\p{L}\p{N}_]/u;
  for (const [term, atWordStart] of terms) {
    let at = lower.indexOf(term);
    while (at !== -1) {
      if (!atWordStart || at === 0 || !wordChar.test(lower[at - 1])) {
        for (let i = at; i < at + term.length; i++) marks[i] = true;
      }
      at = lower.indexOf(term, at + term.length);
    }
  }
  const out = [];
  let start = 0;
  for (let i = 1; i <= text.length; i++) {
    if (i === text.length || marks[i] !== marks[start]) {
      const piece = text.slice(start, i);
      out.push(marks[start] ? el("mark", {}, piece) : piece);
      start = i;
    }
  }
  return out;
}

// Keyboard: `/` focuses the search box, arrows move through the results, Enter opens one.
document.addEventListener("keydown", (event) => {
  const target = event.target;
  const typing = target instanceof HTMLInputElement || target instanceof HTMLTextAreaElement
    || target instanceof HTMLSelectElement;
  if (event.key === "/" && !typing) {
    const box = document.getElementById("q");
    if (box) { event.preventDefault(); box.focus(); box.select(); }
    return;
  }
  if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
  if (typing && target.id !== "q") return;
  const links = [...document.querySelectorAll("ol.results a.title")];
  if (!links.length) return;
  event.preventDefault();
  const current = links.indexOf(document.activeElement);
  const next = event.key === "ArrowDown"
    ? Math.min(current + 1, links.length - 1)
    : current <= 0 ? -1 : current - 1;
  if (next === -1) document.getElementById("q")?.focus();
  else links[next].focus();
});

// ---------------------------------------------------------------------------------------------
// The reader.

async function showReader(kb, path) {
  const root = `/knowledge-bases/${encodeURIComponent(kb)}`;
  const read = await api(`${root}/files/content`, { path });
  const file = read.file || {};
  const article = el("article", { class: "page" });
  const { frontmatter, body } = splitFrontmatter(read.content || "");
  // A page whose title is in its frontmatter only: the title as its heading.
  if (file.title && !/^\s*(#\s|[^\n]+\n=+[ \t]*(\n|$))/.test(body)) {
    article.append(el("h1", { class: "page-title" }, file.title));
  }
  renderMarkdown(article, body, (href) => rewriteLink(kb, path, href));
  const side = el("aside", { class: "side" });
  append(clear(main()), [
    el("div", { class: "reader" },
      el("div", { class: "content" },
        el("div", { class: "path" }, file.path || path),
        meta(file, frontmatter),
        article),
      side),
  ]);
  document.title = `${file.title || path} · kbtools`;
  if (location.hash) document.getElementById(decodeURIComponent(location.hash.slice(1)))?.scrollIntoView();
  if (file.fileKind === "page" && file.fileId) {
    await Promise.all([related(kb, file, side), graph(kb, file, side, 1)]);
  }
}

function meta(file, frontmatter) {
  const signals = file.okfSignals || {};
  const rows = Object.entries(signals).filter(([, v]) => v !== null && v !== undefined && v !== "");
  return el("details", { class: "meta" },
    el("summary", {}, `${t.frontmatter} · ${t.signals}`),
    frontmatter ? el("pre", { class: "frontmatter" }, frontmatter) : null,
    rows.length ? el("table", { class: "signals" }, rows.map(([k, v]) =>
      el("tr", {}, el("th", {}, k), el("td", {}, String(v))))) : null);
}

function splitFrontmatter(text) {
  const match = text.match(/^\uFEFF?(---|\+\+\+)\r?\n([\s\S]*?)\r?\n\1[ \t]*(\r?\n|$)/);
  if (!match) return { frontmatter: "", body: text };
  return { frontmatter: match[2], body: text.slice(match[0].length) };
}

// A link of a page: another file of the knowledge base opens in the reader; an anchor stays;
// an address elsewhere opens as a plain link (no referrer).
function rewriteLink(kb, from, href) {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith("//")) {
    return /^(https?|mailto):/i.test(href) ? { href, external: true } : null;
  }
  if (href.startsWith("#")) return { href };
  const [pathPart, hash] = href.split("#");
  let target;
  try { target = decodeURIComponent(pathPart.split("?")[0]); } catch { target = pathPart; }
  const parts = target.startsWith("/") ? [] : from.split("/").slice(0, -1);
  for (const segment of target.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") parts.pop(); else parts.push(segment);
  }
  const resolved = parts.join("/");
  return { href: kbHref(kb, "/read", { path: resolved }) + (hash ? "#" + hash : ""), nav: true };
}

async function related(kb, file, side) {
  const answer = await api(`/knowledge-bases/${encodeURIComponent(kb)}/files/${encodeURIComponent(file.fileId)}/related`, { limit: 20 });
  const items = answer.items || [];
  append(side, [el("section", { class: "related" },
    el("h2", {}, t.related),
    items.length ? el("ul", {}, items.map((item) => el("li", {},
      el("a", { href: kbHref(kb, "/read", { path: item.path }), "data-nav": true }, item.title || item.path),
      el("span", { class: "lane" }, item.relationType || ""),
      item.reason ? el("div", { class: "muted reason" }, item.reason) : null)))
      : el("p", { class: "muted" }, t.noRelated))]);
}

// A small graph of expand_graph around the file: the file in the middle, related files on
// rings by depth; a click on a node opens it.
async function graph(kb, file, side, depth) {
  const answer = await api(`/knowledge-bases/${encodeURIComponent(kb)}/graph/expand`,
    { fileId: file.fileId, depth, fanout: 10 });
  const nodes = new Map([[file.fileId, { id: file.fileId, title: file.title || file.path, path: file.path, depth: 0 }]]);
  const edges = [];
  for (const r of answer.relationships || []) {
    if (!nodes.has(r.fileId)) nodes.set(r.fileId, { id: r.fileId, title: r.title || r.path, path: r.path, depth: r.relationshipDepth || 1 });
    edges.push([r.fromFileId, r.fileId, r.relationType]);
  }
  const size = 280;
  const center = size / 2;
  const rings = [...nodes.values()].reduce((m, n) => ((m[n.depth] = m[n.depth] || []).push(n), m), {});
  for (const [d, list] of Object.entries(rings)) {
    list.forEach((n, i) => {
      const radius = Number(d) * 95;
      const angle = (2 * Math.PI * i) / list.length - Math.PI / 2 + Number(d) * 0.4;
      n.x = center + radius * Math.cos(angle);
      n.y = center + radius * Math.sin(angle);
    });
  }
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", `0 0 ${size} ${size}`);
  svg.setAttribute("class", "graph");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", t.graphView);
  for (const [from, to, type] of edges) {
    const a = nodes.get(from), b = nodes.get(to);
    if (!a || !b) continue;
    const line = document.createElementNS(NS, "line");
    for (const [k, v] of [["x1", a.x], ["y1", a.y], ["x2", b.x], ["y2", b.y]]) line.setAttribute(k, v.toFixed(1));
    const title = document.createElementNS(NS, "title");
    title.textContent = type;
    line.append(title);
    svg.append(line);
  }
  for (const n of nodes.values()) {
    const link = document.createElementNS(NS, "a");
    link.setAttribute("href", kbHref(kb, "/read", { path: n.path }));
    link.setAttribute("data-nav", "");
    link.setAttribute("class", n.depth === 0 ? "node seed" : "node");
    const circle = document.createElementNS(NS, "circle");
    circle.setAttribute("cx", n.x.toFixed(1));
    circle.setAttribute("cy", n.y.toFixed(1));
    circle.setAttribute("r", n.depth === 0 ? 9 : 6);
    const label = document.createElementNS(NS, "text");
    label.setAttribute("x", (n.x + 9).toFixed(1));
    label.setAttribute("y", (n.y + 4).toFixed(1));
    label.textContent = [...n.title].slice(0, 18).join("") + ([...n.title].length > 18 ? "…" : "");
    const title = document.createElementNS(NS, "title");
    title.textContent = `${n.title}\n${n.path}`;
    link.append(circle, label, title);
    svg.append(link);
  }
  const section = el("section", { class: "graph-view" },
    el("h2", {}, t.graphView, " ",
      el("label", { class: "field" }, t.depth, " ",
        el("select", { onchange: (event) => {
          section.remove();
          graph(kb, file, side, Number(event.target.value));
        } }, [1, 2].map((d) => el("option", { value: d, selected: d === depth }, d))))),
    svg);
  side.append(section);
}

// ---------------------------------------------------------------------------------------------
// The tree.

// A folder or a page, as a small inline SVG (an emoji needs a font many systems lack).
function icon(folder) {
  const NS = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(NS, "svg");
  svg.setAttribute("viewBox", "0 0 16 16");
  svg.setAttribute("class", folder ? "icon folder" : "icon page");
  svg.setAttribute("aria-hidden", "true");
  const path = document.createElementNS(NS, "path");
  path.setAttribute("d", folder
    ? "M1.5 3.5h4.5l1.5 1.5h7v8h-13z"
    : "M3.5 1.5h6l3 3v10h-9z M9.5 1.5v3h3");
  svg.append(path);
  return svg;
}

// Whether a knowledge base is a plain folder: its root holds `pages/` alone (the folder's own
// files), so the tree starts there and no heading says `pages`.
const plainFolders = new Map();
async function isPlainFolder(kb) {
  if (!plainFolders.has(kb)) {
    const root = await api(`/knowledge-bases/${encodeURIComponent(kb)}/tree`, { parentPath: "", limit: 2 });
    const items = root.items || [];
    plainFolders.set(kb, items.length === 1 && items[0].path === "pages" && items[0].entryType === "directory");
  }
  return plainFolders.get(kb);
}

async function showTree(kb, parent) {
  const plain = await isPlainFolder(kb);
  if (plain && parent === "") parent = "pages";
  const answer = await api(`/knowledge-bases/${encodeURIComponent(kb)}/tree`, { parentPath: parent, limit: 200 });
  const top = plain ? "pages" : "";
  const up = parent.includes("/") ? parent.slice(0, parent.lastIndexOf("/")) : "";
  const heading = parent === top ? t.root : plain ? parent.slice("pages/".length) : parent;
  append(clear(main()), [
    el("h1", { class: "tree-title" }, heading),
    parent !== top ? el("a", { href: kbHref(kb, "/tree", up && up !== top ? { parent: up } : null), "data-nav": true, class: "up" }, "↑ " + t.up) : null,
    el("ul", { class: "tree" }, (answer.items || []).map((item) => {
      const folder = item.entryType === "directory";
      const name = el("span", { class: "name" }, item.name);
      const row = el("li", { class: folder ? "dir" : "file" },
        el("a", {
          href: folder ? kbHref(kb, "/tree", { parent: item.path }) : kbHref(kb, "/read", { path: item.path }),
          "data-nav": true,
        }, icon(folder), " ", name),
        folder && item.descendantFileCount ? el("span", { class: "muted" }, ` ${item.descendantFileCount} ${t.files}`) : null);
      // A page shows its title, its file name beside it (the tree entry has no title: asked
      // for each page in view).
      if (!folder && item.fileKind === "page" && item.fileId) {
        api(`/knowledge-bases/${encodeURIComponent(kb)}/files/${encodeURIComponent(item.fileId)}`)
          .then((answer) => {
            const title = answer.file?.title;
            if (title && title !== item.name) {
              name.textContent = title;
              row.append(el("span", { class: "muted" }, " " + item.name));
            }
          })
          .catch(() => {});
      }
      return row;
    })),
  ]);
}

// ---------------------------------------------------------------------------------------------
// Markdown, rendered into DOM nodes: headings (with anchors), paragraphs, lists, quotes, code,
// tables, rules; inline code, links, emphasis. Raw HTML is shown as text.

function slug(text, used) {
  let base = text.toLowerCase().trim().replace(/[^\p{L}\p{N}\s-]/gu, "").replace(/\s+/g, "-") || "section";
  let id = base;
  for (let n = 1; used.has(id); n++) id = `${base}-${n}`;
  used.add(id);
  return id;
}

// Raw HTML (VitePress' `<div class="options-api">`, `<br>`, comments) shows as its text
// content: a line that is only tags or a comment is left out, a tag inside a line is removed
// (code spans keep theirs). Nothing of it is ever parsed as HTML.
const HTML_TAG = /<\/?[A-Za-z][\w-]*(\s[^<>]*)?\/?>|<!--[\s\S]*?-->/g;
const isHtmlOnly = (line) => line.trim() !== "" && line.replace(HTML_TAG, "").trim() === "" && /^\s*</.test(line);
const withoutTags = (text) =>
  text.split(/(`+[^`]*`+)/).map((part, i) => (i % 2 ? part : part.replace(HTML_TAG, ""))).join("");

function renderMarkdown(root, text, link) {
  const lines = text.replace(/\r\n?/g, "\n").split("\n");
  const used = new Set();
  let i = 0;
  const isBlank = (l) => /^\s*$/.test(l);
  const startsBlock = (l) => /^(#{1,6}\s|```|~~~|>|\s*([-*+]|\d+[.)])\s|\s*(\*\s*){3,}$|\s*(-\s*){3,}$|\|)/.test(l);
  while (i < lines.length) {
    const line = lines[i];
    if (isBlank(line) || isHtmlOnly(line)) { i++; continue; }
    let m;
    if ((m = line.match(/^(```|~~~)\s*([\w+-]*)/))) {
      const fence = m[1];
      const code = [];
      i++;
      while (i < lines.length && !lines[i].startsWith(fence)) code.push(lines[i++]);
      i++;
      root.append(el("pre", {}, el("code", { class: m[2] ? `language-${m[2]}` : null }, code.join("\n"))));
    } else if ((m = line.match(/^(#{1,6})\s+(.*?)\s*#*\s*$/))) {
      const level = m[1].length;
      const textOf = m[2].replace(/\s*\{#[^}]*\}\s*$/, "");
      const id = slug(textOf.replace(/[`*_]/g, ""), used);
      root.append(el(`h${level}`, { id }, inline(textOf, link), " ",
        el("a", { class: "anchor", href: `#${id}`, "aria-hidden": "true" }, "#")));
      i++;
    } else if (/^\s*((\*\s*){3,}|(-\s*){3,}|(_\s*){3,})$/.test(line)) {
      root.append(el("hr"));
      i++;
    } else if (line.startsWith(">")) {
      const quoted = [];
      while (i < lines.length && lines[i].startsWith(">")) quoted.push(lines[i++].replace(/^>\s?/, ""));
      const quote = el("blockquote");
      renderMarkdown(quote, quoted.join("\n"), link);
      root.append(quote);
    } else if (line.trim().startsWith("|") && i + 1 < lines.length && /^\s*\|?\s*:?-{2,}/.test(lines[i + 1])) {
      const cells = (l) => l.trim().replace(/^\||\|$/g, "").split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
      const head = cells(line);
      i += 2;
      const rows = [];
      while (i < lines.length && lines[i].trim().startsWith("|")) rows.push(cells(lines[i++]));
      root.append(el("div", { class: "table" }, el("table", {},
        el("thead", {}, el("tr", {}, head.map((c) => el("th", {}, inline(c, link))))),
        el("tbody", {}, rows.map((r) => el("tr", {}, r.map((c) => el("td", {}, inline(c, link)))))))));
    } else if ((m = line.match(/^(\s*)([-*+]|\d+[.)])\s+/))) {
      const ordered = /\d/.test(m[2]);
      const list = el(ordered ? "ol" : "ul");
      const indent = m[1].length;
      while (i < lines.length) {
        const item = lines[i].match(/^(\s*)([-*+]|\d+[.)])\s+(.*)$/);
        if (!item || item[1].length < indent) break;
        const content = [item[3]];
        i++;
        while (i < lines.length && !isBlank(lines[i]) && !/^\s*([-*+]|\d+[.)])\s+/.test(lines[i]) && !startsBlock(lines[i].trim())) {
          content.push(lines[i++].trim());
        }
        const task = content[0].match(/^\[([ xX])\]\s+/);
        const li = el("li", {}, task ? el("input", { type: "checkbox", disabled: true, checked: task[1] !== " " }) : null,
          inline(task ? content.join(" ").slice(task[0].length) : content.join(" "), link));
        list.append(li);
        if (i < lines.length && isBlank(lines[i]) && i + 1 < lines.length && /^\s*([-*+]|\d+[.)])\s+/.test(lines[i + 1])) i++;
      }
      root.append(list);
    } else {
      const paragraph = [];
      while (i < lines.length && !isBlank(lines[i]) && !(paragraph.length && startsBlock(lines[i]))) paragraph.push(lines[i++]);
      const prose = withoutTags(paragraph.join("\n"));
      if (prose.trim()) root.append(el("p", {}, inline(prose, link)));
    }
  }
}

// Inline Markdown to nodes.
function inline(text, link) {
  const out = [];
  const pattern = /(`+)([\s\S]*?[^`])\1(?!`)|!?\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)|<(https?:\/\/[^>\s]+)>|\*\*([^*]+)\*\*|__([^_]+)__|\*([^*\s][^*]*)\*|(?<![\p{L}\p{N}])_([^_\s][^_]*)_(?![\p{L}\p{N}])|~~([^~]+)~~/gu;
  let last = 0;
  for (const m of text.matchAll(pattern)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    last = m.index + m[0].length;
    if (m[2] !== undefined) out.push(el("code", {}, m[2].trim() ? m[2].replace(/^ (.*) $/, "$1") : m[2]));
    else if (m[4] !== undefined) {
      const label = m[3] || m[4];
      const target = link(m[4]);
      if (m[0].startsWith("!")) out.push(el("span", { class: "image-alt" }, `[${label}]`));
      else if (!target) out.push(...inline(label, link));
      else out.push(el("a", {
        href: target.href,
        "data-nav": target.nav || null,
        rel: target.external ? "noopener noreferrer" : null,
        target: target.external ? "_blank" : null,
      }, inline(label, link)));
    } else if (m[5] !== undefined) out.push(el("a", { href: m[5], rel: "noopener noreferrer", target: "_blank" }, m[5]));
    else if (m[6] !== undefined || m[7] !== undefined) out.push(el("strong", {}, inline(m[6] ?? m[7], link)));
    else if (m[8] !== undefined || m[9] !== undefined) out.push(el("em", {}, inline(m[8] ?? m[9], link)));
    else if (m[10] !== undefined) out.push(el("del", {}, inline(m[10], link)));
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

route();
