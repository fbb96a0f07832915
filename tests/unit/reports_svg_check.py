#!/usr/bin/env python3
"""Parses an SVG written by gnuplot with a real XML parser and prints what the reports unit
tests check, as JSON: the size, every <text>, and per plot group (<g id="gnuplot_plot_N">)
its texts and how many markers (<use>), polygons and paths it holds. Exit status 1 when the
file is not well-formed XML or not an SVG document."""
import json
import sys
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"


def main():
    try:
        root = ET.parse(sys.argv[1]).getroot()
    except ET.ParseError as e:
        print(f"{sys.argv[1]}: not well-formed: {e}", file=sys.stderr)
        return 1
    if root.tag != SVG + "svg":
        print(f"{sys.argv[1]}: root element is {root.tag}, not svg", file=sys.stderr)
        return 1
    plots = []
    for g in root.iter(SVG + "g"):
        if not (g.get("id") or "").startswith("gnuplot_plot_"):
            continue
        plots.append({
            "id": g.get("id"),
            "texts": ["".join(t.itertext()) for t in g.iter(SVG + "text")],
            "uses": sum(1 for _ in g.iter(SVG + "use")),
            "polygons": sum(1 for _ in g.iter(SVG + "polygon")),
            "paths": sum(1 for _ in g.iter(SVG + "path")),
        })
    out = {
        "width": root.get("width"),
        "height": root.get("height"),
        "texts": ["".join(t.itertext()) for t in root.iter(SVG + "text")],
        "plots": plots,
    }
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
