// Virtual rows for the Data page's table: a folder of thousands of files keeps only the rows in
// view (plus a margin) in the DOM. Why: building and laying out 2 000 rows with their buttons took
// most of a second; the rows in view take a few milliseconds. Two spacer <tbody>s around the real
// one hold the height of the rows left out, so the scrollbar is true and `#files-body tr` are only
// real rows. Rows have one fixed height (measured from the first one drawn; CSS keeps cells on one
// line in this mode). Small folders (up to ALL_ROWS) are drawn whole, as before.

export const ALL_ROWS = 150;
const MARGIN = 15; // rows drawn above and below the visible ones

export class VirtualRows {
  /** ``scroller``: the element that scrolls; ``body``: the rows' <tbody>; ``rowFn(item, index)`` -> <tr>. */
  constructor(scroller, body, rowFn) {
    this.scroller = scroller;
    this.body = body;
    this.rowFn = rowFn;
    this.items = [];
    this.rowH = 0;
    this.range = [-1, -1];
    this.top = body.parentElement.insertBefore(document.createElement("tbody"), body);
    this.bottom = body.parentElement.insertBefore(document.createElement("tbody"), body.nextSibling);
    for (const s of [this.top, this.bottom]) {
      s.className = "data-vspacer";
      s.setAttribute("aria-hidden", "true");
      const cell = document.createElement("td");
      cell.colSpan = 99;
      s.append(document.createElement("tr"));
      s.firstElementChild.append(cell);
    }
    let pending = 0;
    scroller.addEventListener("scroll", () => {
      if (!pending) pending = requestAnimationFrame(() => { pending = 0; this.draw(false); });
    }, { passive: true });
    window.addEventListener("resize", () => this.draw(false));
  }

  get virtual() {
    return this.items.length > ALL_ROWS;
  }

  /** New items (after a load, sort, filter or selection change): redraw what is in view. */
  set(items) {
    this.items = items;
    this.body.closest("table").classList.toggle("data-virtual", this.virtual);
    this.draw(true);
  }

  /** Bring row ``index`` into view (keyboard users, tests). */
  reveal(index) {
    if (!this.virtual || !this.rowH) return;
    const y = index * this.rowH;
    const s = this.scroller;
    if (y < s.scrollTop || y + this.rowH > s.scrollTop + s.clientHeight - this.headH()) s.scrollTop = y;
    this.draw(false);
  }

  headH() {
    const head = this.body.parentElement.tHead;
    return head ? head.offsetHeight : 0;
  }

  draw(force) {
    const n = this.items.length;
    if (!this.virtual) {
      this.range = [0, n];
      this.spacers(0, 0);
      this.body.replaceChildren(...this.items.map(this.rowFn));
      return;
    }
    if (!this.rowH) { // measure one row in this table's CSS
      this.body.replaceChildren(this.rowFn(this.items[0], 0));
      this.rowH = this.body.firstElementChild.getBoundingClientRect().height || 36;
    }
    const view = Math.max(this.scroller.clientHeight, 300);
    const y = Math.max(0, this.scroller.scrollTop);
    const first = Math.max(0, Math.floor(y / this.rowH) - MARGIN);
    const last = Math.min(n, Math.ceil((y + view) / this.rowH) + MARGIN);
    if (!force && first === this.range[0] && last === this.range[1]) return;
    this.range = [first, last];
    this.spacers(first * this.rowH, (n - last) * this.rowH);
    const rows = [];
    for (let i = first; i < last; i++) rows.push(this.rowFn(this.items[i], i));
    this.body.replaceChildren(...rows);
  }

  spacers(above, below) {
    this.top.firstElementChild.style.height = `${above}px`;
    this.bottom.firstElementChild.style.height = `${below}px`;
    this.top.hidden = !above;
    this.bottom.hidden = !below;
  }
}
