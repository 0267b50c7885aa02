#!/usr/bin/env python3
"""Counts the public items of a crate's rustdoc HTML (`cargo doc -p thinkers --no-deps --all-features`,
then `python3 scripts/public-items.py target/doc/thinkers`): unique items by kind (from all.html) and
inherent/trait methods (from each type's page, without trait-impl methods), deduplicated by the
item's canonical page (re-exports inlined at several paths counted once)."""
import os, re, sys, collections
root = sys.argv[1]
kinds = collections.Counter(); methods = 0; seen = set(); modules = 0
for dp, dn, fn in os.walk(root):
    for f in fn:
        if not f.endswith('.html') or f in ('all.html',): continue
        m = re.match(r'(struct|enum|trait|type|union|fn|constant|static|macro|attr|derive)\.(.+)\.html$', f)
        if f == 'index.html':
            if dp != root: modules += 1
            continue
        if not m: continue
        txt = open(os.path.join(dp, f), encoding='utf-8', errors='replace').read()
        # A redirect page (re-export) is tiny and holds a meta refresh: skip it.
        if 'http-equiv="refresh"' in txt[:600]: continue
        # Deduplicate inlined re-exports by kind+name+the first 200 characters of the docblock's text.
        # The docblock's text without its tags: the same item inlined at two depths links with
        # different relative paths, so the markup differs while the words do not.
        db = re.search(r'<div class="docblock">(.*?)</div>', txt, re.S)
        key = (m.group(1), m.group(2), re.sub(r'<[^>]*>', '', db.group(1))[:200] if db else '')
        if key in seen: continue
        seen.add(key)
        kinds[m.group(1)] += 1
        if m.group(1) in ('struct', 'enum', 'union', 'type'):
            a = txt.find('id="implementations-list"')
            if a >= 0:
                b = txt.find('<h2', a)
                methods += len(re.findall(r'<section id="method\.', txt[a:b if b > 0 else len(txt)]))
        elif m.group(1) == 'trait':
            b = txt.find('id="implementors"')
            methods += len(re.findall(r'<section id="(?:ty)?method\.', txt[:b if b > 0 else len(txt)]))
types = sum(kinds[k] for k in ('struct', 'enum', 'trait', 'type', 'union'))
print(f"modules {modules}  types {types} ({dict((k, kinds[k]) for k in ('struct','enum','trait','type'))})  "
      f"free fns {kinds['fn']}  methods {methods}  functions {kinds['fn'] + methods}  constants {kinds['constant']}  "
      f"items {sum(kinds.values()) + modules + methods}")
