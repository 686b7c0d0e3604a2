"""tests/e2e/check_html.py FILE [--refresh yes|no] [--rows N]

A strict-ish check of one `nas report` page with Python's html.parser:
a <!DOCTYPE html> first; every element closed, in order (void elements
and SVG's self-closed ones aside), nothing left open at the end; the
"All trials" table (id trial-table) is there with one body row per
trial (distinct data-trial ids; exactly N with --rows N); with --refresh
yes a <meta http-equiv="refresh"> in <head>, with no none. Prints one
line; exit 0 ok, 1 not.
"""
import sys
from html.parser import HTMLParser

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source",
        "track", "wbr"}


class Strict(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.doctype = [], [], False
        self.refresh, self.rows, self.in_table, self.in_body = False, [], False, False

    def handle_decl(self, decl):
        self.doctype = self.doctype or decl.lower() == "doctype html"

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "meta" and (a.get("http-equiv") or "").lower() == "refresh":
            if self.stack != ["html", "head"]:
                self.errors.append("meta refresh outside <head>")
            self.refresh = True
        if tag == "table" and a.get("id") == "trial-table":
            self.in_table = True
        if self.in_table and tag == "tbody":
            self.in_body = True
        if self.in_body and tag == "tr":
            self.rows.append(a.get("data-trial"))
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        pass  # <rect .../> in SVG, <br/>: complete elements

    def handle_endtag(self, tag):
        if tag in VOID:
            self.errors.append("end tag of void element </%s>" % tag)
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append("</%s> at line %d closes <%s>" % (
                tag, self.getpos()[0], self.stack[-1] if self.stack else "nothing"))
            return
        self.stack.pop()
        if tag == "tbody" and self.in_body:
            self.in_body = False
        if tag == "table":
            self.in_table = False


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        return 2
    path, want_refresh, want_rows = args[0], None, None
    for i in range(1, len(args) - 1, 2):
        if args[i] == "--refresh":
            want_refresh = args[i + 1] == "yes"
        elif args[i] == "--rows":
            want_rows = int(args[i + 1])
    with open(path, encoding="utf-8") as f:
        text = f.read()
    p = Strict()
    p.feed(text)
    p.close()
    err = list(p.errors)
    if not p.doctype:
        err.append("no <!DOCTYPE html>")
    if p.stack:
        err.append("left open: %s" % " > ".join(p.stack))
    if not text.rstrip().endswith("</html>"):
        err.append("does not end with </html>")
    if not p.rows:
        err.append("no trial rows in table#trial-table")
    if None in p.rows or len(set(p.rows)) != len(p.rows):
        err.append("trial rows without a distinct data-trial: %s" % p.rows)
    if want_rows is not None and len(p.rows) != want_rows:
        err.append("%d trial rows, expected %d" % (len(p.rows), want_rows))
    if want_refresh is not None and p.refresh != want_refresh:
        err.append("meta refresh %s, expected %s" % (p.refresh, want_refresh))
    print("%s: %d trial rows, refresh %s%s" % (path, len(p.rows), p.refresh,
                                              "; " + "; ".join(err) if err else ", ok"))
    return 1 if err else 0


if __name__ == "__main__":
    sys.exit(main())
