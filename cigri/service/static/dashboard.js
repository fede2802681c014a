// cigri's dashboard: keeps the page up to date from its JSON, and sends the owner's actions with the page's
// CSRF token. Everything a user wrote goes into the page with textContent, never as markup.
"use strict";

(function () {
  const body = document.body;
  const root = body.dataset.root;
  const live = body.dataset.live;
  const every = Math.max(1, Number(body.dataset.refresh) || 5) * 1000;
  const tokenMeta = document.querySelector('meta[name="cigri-csrf"]');
  const token = tokenMeta ? tokenMeta.content : "";
  const LABELS = { pause: "Pause", resume: "Resume", cancel: "Cancel", fix: "Fix events" };
  const TIMES = new Set(["estimated_end", "ended_at", "date_open", "date"]);
  let busy = false;
  let lastCampaign = "";

  function clock(epoch) {
    return epoch === null || epoch === undefined ? "—" : new Date(epoch * 1000).toLocaleString();
  }

  function rate(perHour) {
    return perHour === null || perHour === undefined ? "—" : perHour.toFixed(1) + " jobs/h";
  }

  function percent(c) {
    return c.total_jobs ? Math.floor((100 * c.finished_jobs) / c.total_jobs) : 100;
  }

  function interval(c) {
    if (!c.eta_shown) return c.blocked || "";
    if (c.estimated_end_low === null || c.estimated_end_high === null) return "";
    return clock(c.estimated_end_low) + " – " + clock(c.estimated_end_high);
  }

  // the text (and raw value) of each field of an item
  function shown(item, name) {
    switch (name) {
      case "throughput_per_hour":
        return [rate(item.throughput_per_hour), item.throughput_per_hour];
      case "estimated_end":
        return item.eta_shown ? [clock(item.estimated_end), item.estimated_end] : ["—", null];
      case "interval":
        return [interval(item), null];
      case "percent":
        return [String(percent(item)), null];
      case "blocked":
        return [item.blocked || "", null];
      case "prologue_ok":
      case "epilogue_ok":
        return [item[name] ? "done" : "pending", null];
      default: {
        const value = item[name];
        if (TIMES.has(name)) return [clock(value), value];
        return [value === null || value === undefined ? "" : String(value), value];
      }
    }
  }

  function fill(element, item) {
    for (const field of element.querySelectorAll("[data-field]")) {
      const name = field.dataset.field;
      if (name === "bar") {
        field.max = item.total_jobs || 1;
        field.value = item.finished_jobs;
        continue;
      }
      if (name === "meter") {
        field.max = item.max || 1;
        field.value = item.used;
        continue;
      }
      if (!(name in item) && !["percent", "interval"].includes(name)) continue;
      const [text, value] = shown(item, name);
      field.textContent = text;
      if (value === null || value === undefined || typeof value === "object") {
        delete field.dataset.value;
      } else {
        field.dataset.value = String(value);
      }
    }
  }

  function form(action, target, confirmText, resubmit) {
    const element = document.createElement("form");
    element.className = "action";
    element.method = "post";
    element.setAttribute("action", target);
    if (confirmText) element.dataset.confirm = confirmText;
    const hidden = document.createElement("input");
    hidden.type = "hidden";
    hidden.name = "csrf";
    hidden.value = token;
    element.append(hidden);
    if (resubmit) {
      const again = document.createElement("input");
      again.type = "hidden";
      again.name = "resubmit";
      again.value = "1";
      element.append(again);
    }
    const button = document.createElement("button");
    button.type = "submit";
    button.value = resubmit ? "fix-resubmit" : action;
    button.textContent = resubmit ? "Fix events and resubmit" : LABELS[action];
    element.append(button);
    return element;
  }

  function actions(holder, c, withResubmit) {
    const wanted = c.actions.join(" ");
    if (holder.dataset.actions === wanted) return;
    holder.dataset.actions = wanted;
    const cell = holder.querySelector(".actions");
    const forms = c.actions.map((action) =>
      form(action, root + "campaigns/" + c.id + "/" + action, action === "cancel" ? "Cancel campaign " + c.id + "?" : "", false),
    );
    if (withResubmit && c.actions.includes("fix")) forms.push(form("fix", root + "campaigns/" + c.id + "/fix", "", true));
    cell.replaceChildren(...forms);
  }

  // the rows of a table, one per item (by key): new ones from the table's template, gone ones removed
  function rows(tableId, items, key, update) {
    const table = document.getElementById(tableId);
    if (!table) return;
    const tbody = table.tBodies[0];
    const template = document.getElementById(tableId + "-row");
    const existing = new Map([...tbody.rows].map((row) => [row.dataset.id, row]));
    const ordered = items.map((item) => {
      const id = String(item[key]);
      let row = existing.get(id);
      existing.delete(id);
      if (!row) {
        row = template.content.firstElementChild.cloneNode(true);
        row.dataset.id = id;
        row.dataset.actions = "";
      }
      update(row, item);
      return row;
    });
    for (const row of existing.values()) row.remove();
    ordered.forEach((row) => tbody.append(row));
    const empty = document.querySelector('[data-empty="' + tableId + '"]');
    if (empty) empty.hidden = items.length > 0;
  }

  function campaignRow(row, c) {
    fill(row, c);
    row.cells[0].textContent = String(c.id);
    row.querySelector('a[data-field="name"]').setAttribute("href", root + "campaigns/" + c.id);
    actions(row, c, false);
  }

  function eventRow(mayFix) {
    return (row, event) => {
      fill(row, event);
      row.cells[0].textContent = String(event.id);
      const fixForm = row.querySelector("form.action");
      const cell = row.querySelector(".actions");
      if (mayFix && !fixForm) cell.replaceChildren(form("fix", root + "events/" + event.id + "/fix", "", false));
      if (mayFix && fixForm) fixForm.setAttribute("action", root + "events/" + event.id + "/fix");
      if (!mayFix) cell.replaceChildren();
      const button = row.querySelector("form.action button");
      if (button) button.textContent = "Fix";
    };
  }

  function show(data) {
    if (data.campaigns) {
      rows("campaigns", data.campaigns, "id", campaignRow);
      rows("usage", data.usage, "cluster", fill);
    }
    if (data.campaign) {
      const section = document.getElementById("campaign");
      fill(section, data.campaign);
      actions(section, data.campaign, true);
      rows("clusters", Object.values(data.campaign.clusters), "cluster_name", fill);
      rows("events", data.events, "id", eventRow(data.campaign.actions.includes("fix")));
      const now = JSON.stringify(data.campaign);
      const plot = document.getElementById("plot");
      if (plot && lastCampaign && now !== lastCampaign) {
        plot.src = plot.src.split("?")[0] + "?at=" + Date.now();
      }
      lastCampaign = now;
    }
  }

  function updated(text, failed) {
    const element = document.getElementById("updated");
    element.textContent = text;
    element.classList.toggle("failed", failed);
  }

  async function refresh() {
    if (busy || !live) return;
    busy = true;
    try {
      const response = await fetch(live, { headers: { Accept: "application/json" }, cache: "no-store", credentials: "same-origin" });
      const data = await response.json();
      if (!response.ok) throw new Error(data.message || response.statusText);
      show(data);
      body.dataset.updates = String(Number(body.dataset.updates || 0) + 1);
      updated("updated " + new Date().toLocaleTimeString(), false);
    } catch (error) {
      updated("not updated: " + error.message, true);
    } finally {
      busy = false;
    }
  }

  function say(text, ok) {
    const said = document.getElementById("said");
    said.textContent = text;
    said.className = ok ? "ok" : "failed";
    said.hidden = false;
  }

  document.addEventListener("submit", async (event) => {
    const target = event.target;
    if (!target.classList.contains("action")) return;
    event.preventDefault();
    if (target.dataset.confirm && !window.confirm(target.dataset.confirm)) return;
    try {
      const response = await fetch(target.getAttribute("action"), {
        method: "POST",
        body: new URLSearchParams(new FormData(target)),
        headers: { "X-CSRF-Token": token, Accept: "application/json" },
        credentials: "same-origin",
      });
      const answer = await response.json();
      say(answer.message, response.ok);
    } catch (error) {
      say("the service did not answer: " + error.message, false);
    }
    await refresh();
  });

  for (const element of document.querySelectorAll("time[datetime]")) {
    element.textContent = clock(Number(element.getAttribute("datetime")));
  }
  refresh();
  setInterval(refresh, every);
})();
