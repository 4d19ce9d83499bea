import { createHash } from 'node:crypto';

// Below 40rem (a phone, where an approver is when a request comes in) the header wraps into rows of
// 44 px targets, lists of facts and tables of arguments stack, and the tables marked `stack` show each
// row as a block of labelled cells: nothing is wider than the screen.
/** The console's one stylesheet, inline in every page's head; STYLE_HASH lets it, and nothing else, apply. */
export const CSS = `
:root{--fg:#1b1b1f;--muted:#4a4a55;--bg:#f5f6f8;--line:#c9ced6;--link:#0b57d0;--ok:#146c2e;--bad:#a50e0e;--head:#1b2a41}
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
a{color:var(--link)}
:focus-visible{outline:3px solid #ffbf47;outline-offset:2px;box-shadow:0 0 0 5px var(--fg)}
.skip{position:absolute;left:-9999px}.skip:focus{left:1rem;top:1rem;background:#fff;color:var(--fg);padding:.5rem 1rem;z-index:1}
header{background:var(--head);color:#fff}
header .bar{max-width:62rem;margin:0 auto;padding:.75rem 1rem;display:flex;gap:1.5rem;align-items:center;flex-wrap:wrap}
header .brand{font-weight:700;font-size:1.1rem;color:#fff;text-decoration:none}
header nav ul{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;margin:0;padding:0}
header nav a{color:#fff}
header nav a[aria-current=page]{font-weight:700;text-decoration-thickness:3px}
header .who{margin-left:auto;display:flex;gap:.75rem;align-items:center}
header form{margin:0}
main{max-width:62rem;margin:0 auto;padding:1.5rem 1rem 3rem}
h1{font-size:1.6rem;margin:0 0 1rem}
h2{font-size:1.15rem;margin:0 0 .5rem}
.card{background:#fff;border:1px solid var(--line);border-radius:8px;padding:1rem 1.25rem;margin:0 0 1rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.25rem 1rem;margin:.5rem 0}
dt{color:var(--muted);font-weight:600}
dd{margin:0;min-width:0}
pre{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:.6rem .75rem;overflow:auto;font-size:.875rem;margin:0;white-space:pre-wrap;word-break:break-word}
code{font-size:.95em}
.preview{font-size:1.1rem;border-left:4px solid var(--head);padding:.25rem 0 .25rem .75rem;margin:.25rem 0 1rem}
.badge{display:inline-block;padding:.05rem .6rem;border-radius:999px;font-size:.85rem;font-weight:600;border:1px solid currentColor}
.badge.pending{background:#fff4ce;color:#5c4400}
.badge.approved,.badge.executed{background:#e6f4ea;color:#0d5223}
.badge.rejected,.badge.failed{background:#fce8e6;color:#8c1d18}
.badge.expired,.badge.withdrawn{background:#eceff1;color:#3c4043}
button,.button{font:inherit;font-weight:600;padding:.5rem 1.1rem;border-radius:6px;border:2px solid transparent;cursor:pointer;text-decoration:none;display:inline-block;line-height:1.4}
.approve{background:var(--ok);color:#fff}
.reject{background:var(--bad);color:#fff}
.primary{background:var(--link);color:#fff}
.secondary{background:#fff;color:var(--fg);border-color:var(--line)}
header .secondary{padding:.25rem .75rem}
label{display:block;font-weight:600;margin-bottom:.25rem}
textarea,input,select{font:inherit;padding:.5rem;border:2px solid #5f6368;border-radius:6px;width:100%;background:#fff;color:var(--fg)}
.hint{color:var(--muted);font-size:.9rem;margin:.25rem 0 .75rem}
.actions{display:flex;gap:.75rem;margin-top:.75rem;flex-wrap:wrap}
.error,.notice{padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem;border:2px solid}
.error{border-color:var(--bad);background:#fce8e6;color:#5f0f0b}
.notice{border-color:var(--ok);background:#e6f4ea;color:#0d3d1c}
table{width:100%;border-collapse:collapse;background:#fff;border:1px solid var(--line)}
caption{text-align:left;color:var(--muted);padding:.25rem 0}
th,td{text-align:left;padding:.5rem .6rem;border-bottom:1px solid var(--line);vertical-align:top}
th{background:#eef0f3}
.filters{display:flex;gap:1rem;flex-wrap:wrap;align-items:flex-end;margin-bottom:1rem}
.filters div{min-width:11rem}
.narrow{max-width:28rem}
.later{margin-top:1rem}
.chart{display:block;width:100%;height:auto;margin:.5rem 0}
.legend{list-style:none;display:flex;flex-wrap:wrap;gap:.25rem 1.25rem;margin:.25rem 0 .75rem;padding:0}
.legend svg{vertical-align:-1px}
.figure{font-size:2.25rem;font-weight:700;line-height:1.2;margin:.25rem 0}
table.numbers{margin:.75rem 0 0}
.count{text-align:right;font-variant-numeric:tabular-nums}
.visually-hidden{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);white-space:nowrap;border:0}
bdi{unicode-bidi:isolate}
mark.hidden{background:#fff0b3;color:#4d2600;border:1px solid #8a4b00;border-radius:3px;padding:0 .15em;font:600 .8em ui-monospace,monospace;white-space:nowrap}
mark.mixed{background:#fde2e1;color:inherit;text-decoration:underline wavy var(--bad);text-underline-offset:.2em}
.odd{background:var(--bad);color:#fff;font-weight:700;padding:0 .1em;border-radius:2px}
.text{background:#f0f2f5;border:1px solid var(--line);border-radius:6px;padding:.6rem .75rem;white-space:pre-wrap;word-break:break-word;font:.95rem/1.5 ui-monospace,SFMono-Regular,Menlo,monospace}
.findings{margin:.5rem 0 0;padding-left:1.25rem;font-size:.9rem}
.findings li{margin:.2rem 0}
.warn{padding:.75rem 1rem;border-radius:6px;margin:0 0 1rem;border:2px solid #8a4b00;background:#fff4ce;color:#3d2600}
.warn p{margin:0}
table.args{margin:.5rem 0}
table.args th[scope=row]{width:12rem;font-weight:600}
table.args .error{margin:0 0 .5rem}
.badge.active{background:#e6f4ea;color:#0d5223}
.badge.revoked{background:#fce8e6;color:#8c1d18}
.scroll{overflow-x:auto;margin:0 0 1rem}
body:has(table.list) :is(main,header .bar){max-width:90rem}
table.list{font-size:.9rem}
table.list th,table.list td{padding:.4rem .5rem}
form.inline{margin:.4rem 0 0}
button.small{padding:.2rem .6rem;font-size:.85rem}
fieldset{border:1px solid var(--line);border-radius:6px;margin:.5rem 0 1rem;padding:.5rem .75rem}
legend{font-weight:600;padding:0 .25rem}
label.check{display:flex;gap:.5rem;align-items:center;font-weight:400}
label.check input{width:auto}
#token{font-size:1rem;word-break:break-all}
h1,h2,.preview,dd,td,th,li,p{overflow-wrap:break-word}
@media (max-width:40rem){
header .bar{gap:.25rem 1rem;padding:.5rem 1rem}
header nav{flex-basis:100%}
header nav ul{gap:0 .25rem;margin:0 -.5rem}
header nav a{display:flex;align-items:center;min-height:44px;padding:0 .5rem}
header .who{margin-left:0;flex-basis:100%;justify-content:space-between;padding-bottom:.25rem}
header .secondary{min-height:44px;flex:none;white-space:nowrap}
main{padding:1rem .75rem 2rem}
h1{font-size:1.4rem}
.card{padding:.75rem}
button,.button,textarea,input,select{min-height:44px}
.filters div{min-width:0;flex:1 1 9rem}
.filters div:has(input[type=datetime-local]){flex-basis:100%}
dl.meta{grid-template-columns:1fr;gap:0}
dl.meta dd{margin-bottom:.4rem}
:is(table.args,table.stack),:is(table.args,table.stack) :is(caption,tbody,tr,td),table.args th[scope=row]{display:block;width:auto}
:is(table.args,table.stack) caption{padding:.25rem .6rem}
:is(table.args,table.stack) thead{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
:is(table.args,table.stack) thead :is(tr,th){display:block}
table.args th[scope=row]{border-bottom:0;padding-bottom:0;background:none}
table.stack tr{border-bottom:1px solid var(--line);padding:.3rem 0}
table.stack td{display:flow-root;border:0;padding:.15rem .6rem .15rem 8rem}
table.stack td[data-label]::before{content:attr(data-label);float:left;width:7rem;margin-left:-7.4rem;color:var(--muted);font-weight:600}
table.stack td:not([data-label]){padding-left:.6rem}
}
`;

/** The Content-Security-Policy source for the one inline stylesheet: no other style or script can run. */
export const STYLE_HASH = `'sha256-${createHash('sha256').update(CSS).digest('base64')}'`;
