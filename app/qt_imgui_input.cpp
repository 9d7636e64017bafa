// Qt -> Dear ImGui 1.86 input: mouse, wheel, keys, text, focus and HiDPI scale (see qt_imgui_input.h).
#include "qt_imgui_input.h"

#include <QClipboard>
#include <QFocusEvent>
#include <QGuiApplication>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QWheelEvent>
#include <QWidget>

namespace speculum::app {

int qt_key_slot(int qt_key) {
    // Printable keys keep their Latin-1 code; Qt's special keys (0x010000xx) go to 256 + xx.
    if (qt_key >= 0 && qt_key < 256) return qt_key;
    if ((qt_key & 0xFF000000) == 0x01000000 && (qt_key & 0x00FFFF00) == 0) return 256 + (qt_key & 0xFF);
    return -1;
}

void imgui_input_init(ImGuiIO& io) {
    io.BackendPlatformName = "speculum_qt6";
    io.BackendFlags |= ImGuiBackendFlags_HasMouseCursors;
    // The system clipboard through Qt (ImGui's default outside Windows is a private buffer): the Export panel's
    // Copy and Ctrl+C/V in text fields reach other applications.
    io.SetClipboardTextFn = [](void*, const char* text) {
        QGuiApplication::clipboard()->setText(QString::fromUtf8(text));
    };
    io.GetClipboardTextFn = [](void*) -> const char* {
        static QByteArray text;  // ImGui copies it before asking again
        text = QGuiApplication::clipboard()->text().toUtf8();
        return text.constData();
    };
    struct Pair {
        ImGuiKey_ imgui;
        int qt;
    };
    static const Pair map[] = {
        {ImGuiKey_Tab, Qt::Key_Tab},
        {ImGuiKey_LeftArrow, Qt::Key_Left},
        {ImGuiKey_RightArrow, Qt::Key_Right},
        {ImGuiKey_UpArrow, Qt::Key_Up},
        {ImGuiKey_DownArrow, Qt::Key_Down},
        {ImGuiKey_PageUp, Qt::Key_PageUp},
        {ImGuiKey_PageDown, Qt::Key_PageDown},
        {ImGuiKey_Home, Qt::Key_Home},
        {ImGuiKey_End, Qt::Key_End},
        {ImGuiKey_Insert, Qt::Key_Insert},
        {ImGuiKey_Delete, Qt::Key_Delete},
        {ImGuiKey_Backspace, Qt::Key_Backspace},
        {ImGuiKey_Space, Qt::Key_Space},
        {ImGuiKey_Enter, Qt::Key_Return},
        {ImGuiKey_Escape, Qt::Key_Escape},
        {ImGuiKey_KeyPadEnter, Qt::Key_Enter},
        {ImGuiKey_A, Qt::Key_A},
        {ImGuiKey_C, Qt::Key_C},
        {ImGuiKey_V, Qt::Key_V},
        {ImGuiKey_X, Qt::Key_X},
        {ImGuiKey_Y, Qt::Key_Y},
        {ImGuiKey_Z, Qt::Key_Z},
    };
    for (const Pair& p : map) io.KeyMap[p.imgui] = qt_key_slot(p.qt);
}

static void set_modifiers(ImGuiIO& io, Qt::KeyboardModifiers mods) {
    // On macOS Qt reports Command as ControlModifier, which is what ImGui's shortcuts expect as Ctrl.
    io.KeyCtrl  = mods & Qt::ControlModifier;
    io.KeyShift = mods & Qt::ShiftModifier;
    io.KeyAlt   = mods & Qt::AltModifier;
    io.KeySuper = mods & Qt::MetaModifier;
}

static int mouse_index(Qt::MouseButton b) {
    switch (b) {
        case Qt::LeftButton:
            return 0;
        case Qt::RightButton:
            return 1;
        case Qt::MiddleButton:
            return 2;
        case Qt::BackButton:
            return 3;
        case Qt::ForwardButton:
            return 4;
        default:
            return -1;
    }
}

bool feed_qt_event(QEvent* event, ImGuiIO& io, QWidget* widget) {
    switch (event->type()) {
        case QEvent::MouseMove: {
            auto* e     = static_cast<QMouseEvent*>(event);
            io.MousePos = ImVec2(float(e->position().x()), float(e->position().y()));
            return true;
        }
        case QEvent::MouseButtonPress:
        case QEvent::MouseButtonDblClick:
        case QEvent::MouseButtonRelease: {
            auto* e     = static_cast<QMouseEvent*>(event);
            io.MousePos = ImVec2(float(e->position().x()), float(e->position().y()));
            int i       = mouse_index(e->button());
            if (i >= 0) io.MouseDown[i] = event->type() != QEvent::MouseButtonRelease;
            set_modifiers(io, e->modifiers());
            return true;
        }
        case QEvent::Wheel: {
            auto* e = static_cast<QWheelEvent*>(event);
            // One notch is 120 eighths of a degree; ImGui counts notches.
            io.MouseWheelH += float(e->angleDelta().x()) / 120.0f;
            io.MouseWheel += float(e->angleDelta().y()) / 120.0f;
            return true;
        }
        case QEvent::KeyPress:
        case QEvent::KeyRelease: {
            auto* e   = static_cast<QKeyEvent*>(event);
            bool down = event->type() == QEvent::KeyPress;
            int slot  = qt_key_slot(e->key());
            if (slot >= 0) io.KeysDown[slot] = down;
            set_modifiers(io, e->modifiers());
            if (down) {
                const QString text = e->text();
                for (QChar c : text)
                    if (c.isPrint()) io.AddInputCharacterUTF16(c.unicode());
            }
            return true;
        }
        case QEvent::FocusIn:
        case QEvent::FocusOut:
            io.AddFocusEvent(event->type() == QEvent::FocusIn);
            if (event->type() == QEvent::FocusOut) {
                // Keys released while unfocused never reach us: drop them so nothing sticks.
                for (bool& k : io.KeysDown) k = false;
                for (bool& b : io.MouseDown) b = false;
                io.KeyCtrl = io.KeyShift = io.KeyAlt = io.KeySuper = false;
            }
            return true;
        case QEvent::Leave:
            io.MousePos = ImVec2(-FLT_MAX, -FLT_MAX);
            return true;
        default:
            return false;
    }
    (void)widget;
}

void feed_frame(ImGuiIO& io, QWidget* widget, double delta_seconds) {
    const float scale          = float(widget->devicePixelRatioF());
    io.DisplaySize             = ImVec2(float(widget->width()), float(widget->height()));
    io.DisplayFramebufferScale = ImVec2(scale, scale);
    io.DeltaTime               = delta_seconds > 0.0 ? float(delta_seconds) : 1.0f / 60.0f;
}

Qt::CursorShape qt_cursor_for(ImGuiMouseCursor cursor) {
    switch (cursor) {
        case ImGuiMouseCursor_TextInput:
            return Qt::IBeamCursor;
        case ImGuiMouseCursor_ResizeAll:
            return Qt::SizeAllCursor;
        case ImGuiMouseCursor_ResizeNS:
            return Qt::SizeVerCursor;
        case ImGuiMouseCursor_ResizeEW:
            return Qt::SizeHorCursor;
        case ImGuiMouseCursor_ResizeNESW:
            return Qt::SizeBDiagCursor;
        case ImGuiMouseCursor_ResizeNWSE:
            return Qt::SizeFDiagCursor;
        case ImGuiMouseCursor_Hand:
            return Qt::PointingHandCursor;
        case ImGuiMouseCursor_NotAllowed:
            return Qt::ForbiddenCursor;
        case ImGuiMouseCursor_None:
            return Qt::BlankCursor;
        default:
            return Qt::ArrowCursor;
    }
}

}  // namespace speculum::app
